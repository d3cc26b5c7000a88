//! The time axis: the visible window, the cursor and the mark, and every conversion
//! between times and timeline columns. Knows nothing of lanes or panels, so it is
//! tested without a trace.
//!
//! All arithmetic is overflow-safe (i128 or saturating): any zoom or pan works on a
//! trace whose times lie near the limits of i64, and the window always satisfies
//! `t0 + span <= Ns::MAX`.

use crate::model::Ns;

use super::index::snap_edge;

/// The visible time window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// Time at the left edge.
    pub t0: Ns,
    /// Width of the window in ns.
    pub span: Ns,
}

impl View {
    /// First instant right of the window (saturating).
    pub fn end(self) -> Ns {
        self.t0.saturating_add(self.span)
    }
}

/// Clamp an i128 into the range of [`Ns`].
fn sat(x: i128) -> Ns {
    x.clamp(i128::from(Ns::MIN), i128::from(Ns::MAX)) as Ns
}

/// The time axis of the viewer.
#[derive(Debug, Clone)]
pub(crate) struct Viewport {
    view: View,
    /// The cursor time (always inside the window).
    pub cursor: Ns,
    /// The mark, when set (`m`): mark..cursor is the measured range.
    pub mark: Option<Ns>,
    width: usize,
    start: Ns,
    end: Ns,
    /// The trace's finest pyramid bucket (log2 ns): wide cells get edges on a grid no
    /// finer, so that large lanes read them from their pyramids.
    grid: Option<u32>,
}

impl Viewport {
    /// A viewport over `[start, end)` showing all of it on `width` columns.
    pub(crate) fn new(start: Ns, end: Ns, width: usize) -> Self {
        let mut v = Self {
            view: View { t0: start, span: 1 },
            cursor: start,
            mark: None,
            width: width.max(1),
            start,
            end: end.max(start),
            grid: None,
        };
        v.fit_all();
        v
    }

    /// The visible window.
    pub(crate) fn view(&self) -> View {
        self.view
    }

    /// Timeline columns.
    pub(crate) fn width(&self) -> usize {
        self.width
    }

    /// Lay the axis out on `width` columns (at least one).
    pub(crate) fn set_width(&mut self, width: usize) {
        if self.width != width.max(1) {
            self.width = width.max(1);
            self.clamp();
        }
    }

    /// Length of the trace (saturating).
    pub(crate) fn duration(&self) -> Ns {
        self.end.saturating_sub(self.start)
    }

    /// Nanoseconds per cell (at least 1).
    pub(crate) fn ns_per_cell(&self) -> Ns {
        (self.view.span / self.width as Ns).max(1)
    }

    /// Round wide cells to the pyramid grid `2^grid` ns (see [`snap_edge`]).
    pub(crate) fn set_grid(&mut self, grid: Option<u32>) {
        self.grid = grid;
    }

    /// Left edge of column `col` (`col == width`: the right edge of the last).
    fn edge(&self, col: usize) -> Ns {
        snap_edge(self.view.t0, self.view.span, self.width, col, self.grid)
    }

    /// Bucket `[a, b)` of column `col`.
    pub(crate) fn bucket(&self, col: usize) -> (Ns, Ns) {
        (self.edge(col), self.edge(col + 1))
    }

    /// The `w + 1` edges of the window cut into `w` columns (the viewport's own width
    /// once laid out): what every row of a frame is drawn over.
    pub(crate) fn edges_on(&self, w: usize) -> Vec<Ns> {
        (0..=w).map(|k| snap_edge(self.view.t0, self.view.span, w, k, self.grid)).collect()
    }

    /// The middle of column `col`.
    pub(crate) fn time_at(&self, col: usize) -> Ns {
        let (a, b) = self.bucket(col.min(self.width - 1));
        a + (b - a) / 2
    }

    /// Column holding time `t`, if it is in view.
    pub(crate) fn col_of(&self, t: Ns) -> Option<usize> {
        if t < self.view.t0 || t >= self.view.end() {
            return None;
        }
        let off = i128::from(t) - i128::from(self.view.t0);
        let mut c = ((off * self.width as i128 / i128::from(self.view.span.max(1))) as usize).min(self.width - 1);
        // Integer edges, rounded to the grid when cells are wide: step to the bucket that
        // holds t (one step at most either way).
        if c > 0 && self.bucket(c).0 > t {
            c -= 1;
        } else if c + 1 < self.width && self.bucket(c).1 <= t {
            c += 1;
        }
        Some(c)
    }

    /// Column of the cursor.
    pub(crate) fn cursor_col(&self) -> usize {
        self.col_of(self.cursor).unwrap_or(0)
    }

    /// Mark-to-cursor time, when the mark is set.
    pub(crate) fn measured(&self) -> Option<Ns> {
        self.mark.map(|m| self.cursor.saturating_sub(m))
    }

    fn min_span(&self) -> Ns {
        self.width as Ns
    }

    fn max_span(&self) -> Ns {
        self.duration().saturating_mul(2).max(self.min_span() * 2).max(1_000)
    }

    /// Keep the span within limits, the window near the trace and the cursor inside it.
    pub(crate) fn clamp(&mut self) {
        let (min, max) = (self.min_span(), self.max_span());
        let v = &mut self.view;
        v.span = v.span.clamp(min, max);
        let lo = self.start.saturating_sub(v.span / 2);
        let hi = self.end.saturating_sub(v.span / 2).max(lo);
        v.t0 = v.t0.clamp(lo, hi).min(Ns::MAX - v.span);
        self.cursor = self.cursor.clamp(v.t0, v.t0 + v.span - 1);
    }

    /// Show `[t0, t0 + span)` and put the cursor in its middle.
    pub(crate) fn set_view(&mut self, t0: Ns, span: Ns) {
        self.view = View { t0, span };
        self.clamp();
        self.cursor = self.view.t0 + self.view.span / 2;
    }

    /// Show the whole trace.
    pub(crate) fn fit_all(&mut self) {
        let d = self.duration().max(self.min_span());
        self.set_view(self.start, d);
    }

    /// Scale the span by `num / den`, keeping time `at` in its column.
    pub(crate) fn zoom_around(&mut self, at: Ns, num: i128, den: i128) {
        let old = self.view.span.max(1);
        let span = sat(i128::from(old) * num / den.max(1)).clamp(self.min_span(), self.max_span());
        let off = (i128::from(at) - i128::from(self.view.t0)) * i128::from(span) / i128::from(old);
        self.view = View { t0: sat(i128::from(at) - off), span };
        let cursor = self.cursor;
        self.clamp();
        if self.col_of(cursor).is_some() {
            self.cursor = cursor;
        }
    }

    /// Scale the span by `num / den` around the cursor.
    pub(crate) fn zoom(&mut self, num: i128, den: i128) {
        self.zoom_around(self.cursor, num, den);
    }

    /// Move the window (and the cursor with it) by `delta` ns.
    pub(crate) fn pan(&mut self, delta: Ns) {
        let t0 = self.view.t0;
        self.view.t0 = t0.saturating_add(delta);
        self.clamp();
        self.cursor = sat(i128::from(self.cursor) + i128::from(self.view.t0) - i128::from(t0));
        self.clamp();
    }

    /// Pan by `eighths` eighths of the screen (at least a cell each).
    pub(crate) fn pan_eighths(&mut self, eighths: Ns) {
        self.pan(eighths.saturating_mul((self.view.span / 8).max(self.ns_per_cell())));
    }

    /// Pan by whole screens.
    pub(crate) fn pan_screens(&mut self, screens: Ns) {
        self.pan(screens.saturating_mul(self.view.span));
    }

    /// Move the cursor by `cols` cells; past an edge the view pans instead.
    pub(crate) fn move_cursor(&mut self, cols: isize) {
        let c = self.cursor_col() as isize + cols;
        if c < 0 || c >= self.width as isize {
            self.pan((cols as Ns).saturating_mul(self.ns_per_cell()));
            return;
        }
        self.cursor = self.time_at(c as usize);
    }

    /// Put the cursor in column `col`.
    pub(crate) fn set_cursor_col(&mut self, col: usize) {
        self.cursor = self.time_at(col);
    }

    /// Show the end of the trace at the current zoom.
    pub(crate) fn view_end(&mut self) {
        let span = self.view.span;
        self.view.t0 = self.end.saturating_sub(span).saturating_add(span / 20);
        self.cursor = self.end.saturating_sub(1);
        self.clamp();
    }

    /// Show `[a, b)` over about 60% of the width, cursor in the middle.
    pub(crate) fn zoom_to(&mut self, a: Ns, b: Ns) {
        let len = b.saturating_sub(a).max(1);
        let span = sat(i128::from(len) * 5 / 3).max(self.min_span());
        let mid = a.saturating_add(len / 2);
        self.set_view(mid.saturating_sub(span / 2), span);
        self.cursor = mid.clamp(self.view.t0, self.view.t0 + self.view.span - 1);
    }

    /// Show `[a, b]` with a small margin; keep the cursor when it stays inside the
    /// range and in view, else put it at `a`.
    pub(crate) fn fit_range(&mut self, a: Ns, b: Ns) {
        let len = b.saturating_sub(a).max(1);
        let span = len.saturating_add(len / 4).max(self.min_span());
        let cursor = self.cursor;
        self.view = View { t0: a.saturating_add(len / 2).saturating_sub(span / 2), span };
        self.clamp();
        let keep = (a..=b).contains(&cursor) && self.col_of(cursor).is_some();
        self.cursor = if keep { cursor } else { a.clamp(self.view.t0, self.view.t0 + self.view.span - 1) };
    }

    /// Pan so that `t` is in view, keeping the zoom; centre it when it was off screen.
    pub(crate) fn reveal(&mut self, t: Ns) {
        if self.col_of(t).is_none() {
            self.view.t0 = t.saturating_sub(self.view.span / 2);
            self.clamp();
        }
        self.cursor = t.clamp(self.view.t0, self.view.t0 + self.view.span - 1);
    }

    /// Set the extent the window is kept near (the two-run view: both runs on one axis).
    pub(crate) fn set_extent(&mut self, start: Ns, end: Ns) {
        (self.start, self.end) = (start, end.max(start));
        self.clamp();
    }

    /// Copy `other`'s window, cursor and mark shifted by `shift` ns, unclamped: both
    /// axes have the same extent up to the shift, so `other`'s clamp holds here too.
    pub(crate) fn follow(&mut self, other: &Viewport, shift: Ns) {
        let at = |t: Ns| sat(i128::from(t) + i128::from(shift));
        let span = other.view.span;
        self.view = View { t0: at(other.view.t0).min(Ns::MAX - span), span };
        self.cursor = at(other.cursor).clamp(self.view.t0, self.view.t0 + span - 1);
        self.mark = other.mark.map(at);
        self.width = other.width;
    }

    /// Set the mark at the cursor, or clear it when it is there.
    pub(crate) fn toggle_mark(&mut self) {
        self.mark = if self.mark == Some(self.cursor) { None } else { Some(self.cursor) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(v: &Viewport) {
        let w = v.view();
        assert!(w.span >= 1);
        assert!(i128::from(w.t0) + i128::from(w.span) <= i128::from(Ns::MAX));
        assert!(v.cursor >= w.t0 && v.cursor < w.t0 + w.span, "{v:?}");
        let c = v.cursor_col();
        assert!(c < v.width());
        let (a, b) = v.bucket(v.width() - 1);
        assert!(a <= b);
    }

    #[test]
    fn zoom_and_pan_are_safe_at_the_limits_of_i64() {
        for (start, end) in
            [(Ns::MIN, Ns::MAX), (Ns::MIN + 1, Ns::MIN + 5), (Ns::MAX - 5, Ns::MAX), (0, Ns::MAX), (Ns::MIN, 0)]
        {
            for (width, grid) in [(1, None), (7, None), (200, None), (7, Some(0)), (200, Some(20))] {
                let mut v = Viewport::new(start, end, width);
                v.set_grid(grid);
                check(&v);
                for _ in 0..80 {
                    v.zoom(1, 2);
                    check(&v);
                }
                for _ in 0..20 {
                    v.pan_screens(Ns::MAX);
                    check(&v);
                    v.move_cursor(isize::MAX / 2);
                    check(&v);
                }
                for _ in 0..80 {
                    v.zoom(2, 1);
                    check(&v);
                    v.pan_eighths(-1);
                    check(&v);
                }
                v.pan_screens(Ns::MIN);
                v.view_end();
                check(&v);
                v.zoom_to(Ns::MIN, Ns::MAX);
                check(&v);
                v.fit_range(Ns::MAX - 1, Ns::MAX);
                check(&v);
                v.reveal(Ns::MIN);
                check(&v);
                v.zoom_around(Ns::MAX, 1, 3);
                v.toggle_mark();
                v.set_cursor_col(width - 1);
                assert!(v.measured().is_some());
                v.fit_all();
                check(&v);
            }
        }
    }

    #[test]
    fn a_follower_shows_the_same_columns_shifted() {
        let mut lead = Viewport::new(1_000, 2_000_000, 80);
        let mut follow = Viewport::new(0, 10, 1);
        let shift = 5_000_000;
        lead.set_extent(1_000, 7_000_000);
        follow.set_extent(1_000 + shift, 7_000_000 + shift);
        lead.zoom_to(300_000, 400_000);
        follow.follow(&lead, shift);
        assert_eq!(follow.view().span, lead.view().span);
        for t in [300_000, 333_333, 399_999] {
            assert_eq!(follow.col_of(t + shift), lead.col_of(t));
        }
        assert_eq!(follow.cursor_col(), lead.cursor_col());
        follow.follow(&Viewport::new(Ns::MAX - 10, Ns::MAX, 3), Ns::MAX);
        check(&follow);
    }

    #[test]
    fn on_the_pyramid_grid_every_column_holds_its_times() {
        let mut v = Viewport::new(-3_000_000_000, 1_650_000_000_000, 200);
        v.set_grid(Some(18));
        for k in 0..40 {
            let span = 1_650_000_000_000 >> (k % 20);
            v.set_view(-3_000_000_000 + 41_000_000_007 * k, span);
            let edges = v.edges_on(v.width());
            assert!(edges.windows(2).all(|p| p[0] < p[1]));
            for col in 0..v.width() {
                assert_eq!(v.bucket(col), (edges[col], edges[col + 1]));
                assert_eq!(v.col_of(v.time_at(col)), Some(col), "view {:?} column {col}", v.view());
                let (a, b) = v.bucket(col);
                for t in [a, b - 1] {
                    if v.col_of(t).is_some() {
                        assert_eq!(v.col_of(t), Some(col), "t {t} view {:?}", v.view());
                    }
                }
            }
        }
    }

    #[test]
    fn zoom_keeps_the_time_under_the_pointer_in_its_column() {
        let mut v = Viewport::new(0, 1_000_000, 100);
        let at = v.time_at(30);
        v.zoom_around(at, 1, 2);
        assert!(v.col_of(at).is_some_and(|c| c.abs_diff(30) <= 1));
        assert_eq!(v.view().span, 500_000);
    }
}
