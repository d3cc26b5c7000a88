//! Panels: one file per panel, each owning its state, the keys it handles and its
//! drawing. [`Panel`] is the slide-in panel that is open (details, phase table, gap
//! list, step budget); help and search are overlays with their own state in [`App`].
//!
//! A panel answers actions with an [`Effect`] that the app carries out (zoom to a
//! gap, show a message), so panels never hold `&mut App`. They read the app through a
//! [`Context`] it lends them: panels sit below the app (`app.rs` holds their state) and
//! never name it.
//!
//! Adding a panel: a file here (state, `open`, `on_action`, `on_click`, `render`), a
//! variant of [`Panel`] with its arms below, and the key that opens it in the key
//! table (`input.rs`).

pub(crate) mod details;
pub(crate) mod gaps;
pub(crate) mod help;
pub(crate) mod phases;
pub(crate) mod search;
pub(crate) mod steps;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders};

use crate::analysis::regap::Pool;
use crate::analysis::{Analysis, DeviceActivity};
use crate::model::Ns;

use super::input::{Action, Mode};
use super::layout::PanelShape;
use super::theme::Theme;

pub(super) use details::Details;
pub(super) use gaps::GapList;
pub(super) use help::Help;
pub(super) use phases::PhaseTable;
pub(super) use search::Search;
pub(super) use steps::StepPanel;

/// The app as panels see it (`App::panel_context`): what they read to open, answer keys and draw.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context<'a> {
    /// The analysis (phases).
    pub analysis: &'a Analysis,
    /// Per GPU busy unions (the app keeps them apart from the analysis).
    pub devices: &'a [DeviceActivity],
    /// Gaps at the current threshold.
    pub gaps: &'a Pool,
    /// The gap threshold.
    pub threshold: Ns,
    /// The selected gap, when the selection is a gap.
    pub selected_gap: Option<usize>,
    /// Facts about the selection, when something is selected.
    pub details: Option<&'a Details>,
    /// Where displayed times count from ([`Context::rel`]).
    pub time_base: Ns,
    /// Colours.
    pub theme: Theme,
    /// The inside of the help overlay's rectangle.
    pub help_inner: Rect,
}

impl Context<'_> {
    /// Time `t` as every screen shows it (`App::rel`).
    pub(crate) fn rel(&self, t: Ns) -> Ns {
        t.saturating_sub(self.time_base)
    }
}

/// The slide-in panel that is open.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Panel {
    /// Details of the selection.
    Details,
    /// Per-phase table.
    Phases(PhaseTable),
    /// Gap list.
    Gaps(GapList),
    /// Step budget: a bar per step.
    Steps(StepPanel),
}

/// What the app does after a panel handled an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Nothing more.
    None,
    /// Select gap `i` and zoom to it.
    ShowGap(usize),
    /// Zoom to `[a, b)` and say `message`.
    ZoomTo(Ns, Ns, String),
}

impl Panel {
    /// The panel `action` opens, if it opens one.
    pub(crate) fn for_action(action: Action, app: &Context) -> Option<Self> {
        match action {
            Action::Details => Some(Panel::Details),
            Action::Phases => Some(Panel::Phases(PhaseTable::open(app))),
            Action::GapList => Some(Panel::Gaps(GapList::open(app))),
            Action::Steps => Some(Panel::Steps(StepPanel::open(app))),
            _ => None,
        }
    }

    /// True when both are the same kind of panel.
    pub(crate) fn same_kind(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }

    /// Where it goes on screen.
    pub(crate) fn shape(&self) -> PanelShape {
        match self {
            Panel::Details => PanelShape::Text,
            Panel::Phases(_) | Panel::Gaps(_) | Panel::Steps(_) => PanelShape::Table,
        }
    }

    /// The key mode while it is open.
    pub(crate) fn mode(&self) -> Mode {
        match self {
            Panel::Details => Mode::Timeline,
            Panel::Phases(_) | Panel::Gaps(_) | Panel::Steps(_) => Mode::List,
        }
    }

    /// Handle an action of its mode.
    pub(crate) fn on_action(&mut self, action: Action, app: &Context) -> Effect {
        match self {
            Panel::Details => Effect::None,
            Panel::Phases(p) => p.on_action(action, app),
            Panel::Gaps(g) => g.on_action(action, app),
            Panel::Steps(s) => s.on_action(action, app),
        }
    }

    /// Handle a click at row `y` of the screen, inside the panel's `area`.
    pub(crate) fn on_click(&mut self, area: Rect, y: u16, app: &Context) -> Effect {
        match self {
            Panel::Details => Effect::None,
            Panel::Phases(p) => p.on_click(area, y, app),
            Panel::Gaps(g) => g.on_click(area, y, app),
            Panel::Steps(s) => s.on_click(area, y, app),
        }
    }

    /// Keep the state valid after the gaps changed (new threshold).
    pub(crate) fn gaps_changed(&mut self, app: &Context) {
        match self {
            Panel::Gaps(g) => g.clamp(app),
            Panel::Steps(s) => s.refresh(app),
            Panel::Details | Panel::Phases(_) => {}
        }
    }

    /// Draw it into `area`.
    pub(crate) fn render(&self, frame: &mut Frame, app: &Context, area: Rect) {
        match self {
            Panel::Details => details::render(frame, app, area),
            Panel::Phases(p) => p.render(frame, app, area),
            Panel::Gaps(g) => g.render(frame, app, area),
            Panel::Steps(s) => s.render(frame, app, area),
        }
    }
}

/// Move a highlighted row `sel` of `n` rows by a list action; true when it was one.
pub(crate) fn list_move(sel: &mut usize, n: usize, action: Action) -> bool {
    let delta: isize = match action {
        Action::ListUp => -1,
        Action::ListDown => 1,
        Action::ListPageUp => -10,
        Action::ListPageDown => 10,
        Action::ListTop => isize::MIN / 2,
        Action::ListBottom => isize::MAX / 2,
        _ => return false,
    };
    *sel = (*sel as isize).saturating_add(delta).clamp(0, (n as isize - 1).max(0)) as usize;
    true
}

/// The table row under screen row `y` of a bordered table panel at `area` with a
/// header line, given `n` rows and the highlighted `sel` (None: border or header).
pub(crate) fn row_at(area: Rect, y: u16, n: usize, sel: usize) -> Option<usize> {
    let first = area.y + 2;
    let h = usize::from(area.height.saturating_sub(3));
    if y < first || usize::from(y - first) >= h {
        return None;
    }
    let row = window(n, h, sel).start + usize::from(y - first);
    (row < n).then_some(row)
}

/// What a click on row `row` does: the first click highlights, a second zooms.
pub(crate) fn click(sel: &mut usize, row: Option<usize>) -> bool {
    match row {
        Some(r) if r == *sel => true,
        Some(r) => {
            *sel = r;
            false
        }
        None => false,
    }
}

/// A bordered panel block with a title.
pub(crate) fn panel_block(theme: Theme, title: &str) -> Block<'static> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border())
        .title(format!(" {title} "))
        .title_style(Style::new().add_modifier(Modifier::BOLD))
}

/// Window of `n` rows of height `h` that keeps `sel` visible, roughly centred.
pub(crate) fn window(n: usize, h: usize, sel: usize) -> std::ops::Range<usize> {
    if n <= h {
        return 0..n;
    }
    let start = sel.saturating_sub(h / 2).min(n - h);
    start..start + h
}
