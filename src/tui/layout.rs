//! Screen areas, shared by the renderer, the state (timeline width, lane rows, help
//! scroll limits) and the mouse (what is under the pointer).

use ratatui::layout::Rect;

/// Smallest usable terminal.
pub(super) const MIN_SIZE: (u16, u16) = (60, 12);

/// Rows kept under the lanes for the findings box (its border and the first finding's
/// first line) on terminals at least [`FINDINGS_FROM`] in size.
pub(crate) const FINDINGS_ROWS: u16 = 3;

/// From this size (a default terminal) up, the first finding is always on screen.
pub(crate) const FINDINGS_FROM: (u16, u16) = (80, 24);

/// Where each region goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Areas {
    /// True when the terminal is below [`MIN_SIZE`]; nothing else is valid then.
    pub too_small: bool,
    /// Title bar.
    pub header: Rect,
    /// Time ruler (label column included).
    pub ruler: Rect,
    /// Lane rows (label column included).
    pub lanes: Rect,
    /// Rows kept for the findings box right under the lanes (height 0 when none are);
    /// the box also takes the lanes' rows left empty.
    pub findings: Rect,
    /// Width of the label column (a separator column follows it).
    pub label_w: u16,
    /// The slide-in panel, when one is open (help excluded: it overlays everything).
    pub panel: Option<Rect>,
    /// Status lines.
    pub status: Rect,
    /// The help overlay, when open (it covers everything but the status lines).
    pub help: Rect,
}

/// What kind of panel is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PanelShape {
    /// None.
    None,
    /// Text (details): right side on wide terminals, else below the lanes.
    Text,
    /// A table (phases, gaps): always below the lanes, which keeps its columns wide.
    Table,
}

impl Areas {
    /// Compute the areas of a `area`-sized screen with a panel of shape `panel`, keeping
    /// rows for the findings box when `findings` (the trace has some).
    pub(crate) fn new(area: Rect, panel: PanelShape, findings: bool) -> Self {
        let (w, h) = (area.width, area.height);
        if w < MIN_SIZE.0 || h < MIN_SIZE.1 {
            return Self { too_small: true, ..Self::default() };
        }
        let status_h = if h >= 30 { 2 } else { 1 };
        let header = Rect::new(area.x, area.y, w, 1);
        let ruler = Rect::new(area.x, area.y + 1, w, 1);
        let body = Rect::new(area.x, area.y + 2, w, h - 2 - status_h);
        let status = Rect::new(area.x, area.y + h - status_h, w, status_h);
        let (lanes_w, lanes_h, panel) = if panel == PanelShape::None {
            (w, body.height, None)
        } else if w >= 150 && panel == PanelShape::Text {
            let pw = (w * 2 / 5).clamp(50, 80);
            (w - pw, body.height, Some(Rect::new(area.x + w - pw, body.y, pw, body.height)))
        } else {
            let share = if panel == PanelShape::Text { body.height / 2 } else { body.height * 2 / 5 };
            let ph = share.clamp(8, 16).min(body.height.saturating_sub(3));
            (w, body.height - ph, Some(Rect::new(area.x, body.y + body.height - ph, w, ph)))
        };
        let label_w = if lanes_w >= 160 {
            22
        } else if lanes_w >= 110 {
            18
        } else {
            14
        };
        // A panel under the lanes is what the user asked to see: it takes the rows instead.
        let below = panel.is_some_and(|p| p.x == area.x);
        let keep = findings && !below && w >= FINDINGS_FROM.0 && h >= FINDINGS_FROM.1;
        let findings_h = if keep { FINDINGS_ROWS.min(lanes_h.saturating_sub(1)) } else { 0 };
        let lanes_h = lanes_h - findings_h;
        let ruler = Rect { width: lanes_w, ..ruler };
        let help_w = w.saturating_sub(4).min(190);
        let help = Rect::new(area.x + (w - help_w) / 2, area.y + 1, help_w, h.saturating_sub(2));
        Self {
            too_small: false,
            header,
            ruler,
            lanes: Rect::new(body.x, body.y, lanes_w, lanes_h),
            findings: Rect::new(body.x, body.y + lanes_h, lanes_w, findings_h),
            label_w,
            panel,
            status,
            help,
        }
    }

    /// The help overlay inside its border.
    pub(crate) fn help_inner(&self) -> Rect {
        Rect::new(
            self.help.x + 1,
            self.help.y + 1,
            self.help.width.saturating_sub(2),
            self.help.height.saturating_sub(2),
        )
    }

    /// Columns of the timeline (right of the label column and its separator).
    pub(crate) fn timeline_w(&self) -> u16 {
        self.lanes.width.saturating_sub(self.label_w + 1)
    }

    /// First column of the timeline.
    pub(crate) fn timeline_x(&self) -> u16 {
        self.lanes.x + self.label_w + 1
    }
}
