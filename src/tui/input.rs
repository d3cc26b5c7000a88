//! The key table: keys to actions per mode, with their help text and status-line
//! hints. Dispatch ([`action`]), the `?` help, the status-line hints ([`hints`]) and
//! the README's key and mouse tables ([`markdown`], checked by a test) all come from
//! it. A new key is one row here and one arm in `App::apply`.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

impl Action {
    /// True for what reads the analysis (gaps, phases, the steady window, correlation
    /// lookups): while it runs behind the first frame, such keys wait for it.
    pub(crate) fn needs_analysis(self) -> bool {
        matches!(
            self,
            Action::FitSteady
                | Action::Jump
                | Action::NextGap
                | Action::PrevGap
                | Action::ThresholdUp
                | Action::ThresholdDown
                | Action::GapList
                | Action::Phases
                | Action::Details
        )
    }
}

/// Something the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Halve the visible time span around the cursor.
    ZoomIn,
    /// Double the visible time span around the cursor.
    ZoomOut,
    /// Move the view (and the cursor) an eighth of the screen back in time.
    PanLeft,
    /// Move the view (and the cursor) an eighth of the screen forward in time.
    PanRight,
    /// Move the view (and the cursor) a whole screen back in time.
    PageLeft,
    /// Move the view (and the cursor) a whole screen forward in time.
    PageRight,
    /// Move the cursor one cell back.
    CursorLeft,
    /// Move the cursor one cell forward.
    CursorRight,
    /// Show the whole trace.
    FitAll,
    /// Show the end of the trace at the current zoom.
    ViewEnd,
    /// Zoom to the selection (or the mark..cursor range).
    FitSelection,
    /// Zoom to the steady-state window (the steps after the first).
    FitSteady,
    /// Focus the previous row.
    LaneUp,
    /// Focus the next row.
    LaneDown,
    /// Scroll the lanes a page up.
    LanePageUp,
    /// Scroll the lanes a page down.
    LanePageDown,
    /// Collapse or expand the focused group.
    ToggleGroup,
    /// Collapse or expand every group.
    ToggleAllGroups,
    /// Pin the focused lane to the top, or unpin it.
    Pin,
    /// Show every GPU metric row, or only the key ones (PCIe RX/TX, SMs Active).
    ToggleMetrics,
    /// Select the next event in the focused lane.
    NextEvent,
    /// Select the previous event in the focused lane.
    PrevEvent,
    /// Select the event under the cursor and show its details.
    Select,
    /// Jump between a GPU operation and the API call that launched it.
    Jump,
    /// Show or hide the details panel.
    Details,
    /// Jump to the next idle gap of at least the threshold.
    NextGap,
    /// Focus the next rank's GPU (several exports on one timeline).
    NextRank,
    /// Jump to the previous idle gap of at least the threshold.
    PrevGap,
    /// Open the gap list.
    GapList,
    /// Double the gap threshold.
    ThresholdUp,
    /// Halve the gap threshold.
    ThresholdDown,
    /// Open the per-phase table.
    Phases,
    /// Open the step budget (a bar per step).
    Steps,
    /// Start typing a search.
    Search,
    /// Select the next search match.
    NextMatch,
    /// Select the previous search match.
    PrevMatch,
    /// Set the mark at the cursor, or clear it.
    Mark,
    /// Open or close the help.
    Help,
    /// Close the panel, or quit when none is open.
    Back,
    /// Quit.
    Quit,
    /// Suspend to the shell (Ctrl-Z); `fg` resumes.
    Suspend,
    /// Move up in a list or the help.
    ListUp,
    /// Move down in a list or the help.
    ListDown,
    /// Page up in a list or the help.
    ListPageUp,
    /// Page down in a list or the help.
    ListPageDown,
    /// First row of a list.
    ListTop,
    /// Last row of a list.
    ListBottom,
    /// Zoom to the highlighted row of a list.
    ListEnter,
    /// Sort a table by its next column.
    SortNext,
    /// Reverse the sort order.
    SortReverse,
    /// Sort a table by column N (1-based).
    SortColumn(u8),
    /// Run the search typed so far.
    SearchRun,
    /// Close the search prompt.
    SearchCancel,
    /// Clear the search prompt.
    SearchClear,
    /// Delete the last character of the search prompt.
    SearchBackspace,
    /// Two-run view: align both runs at the next step instance.
    NextStep,
    /// Two-run view: align both runs at the previous step instance.
    PrevStep,
    /// Two-run view: align at the chosen step, or each run from its own start.
    ToggleAlign,
    /// Two-run view: show or hide the per-phase delta table.
    DeltaPanel,
    /// Two-run view: move the focus (and the keys) to the other run.
    SwitchRun,
}

/// A key as written in the binding table.
#[derive(Debug, Clone, Copy)]
pub enum Key {
    /// A character, with or without Shift.
    Char(char),
    /// A character with Ctrl.
    Ctrl(char),
    /// A special key without modifiers.
    Code(KeyCode),
    /// A special key with Shift.
    Shift(KeyCode),
}

impl Key {
    fn matches(self, ev: &KeyEvent) -> bool {
        let m = ev.modifiers;
        let plain = !m.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match self {
            Key::Char(c) => plain && ev.code == KeyCode::Char(c),
            Key::Ctrl(c) => m.contains(KeyModifiers::CONTROL) && ev.code == KeyCode::Char(c),
            Key::Code(k) => plain && ev.code == k && (!m.contains(KeyModifiers::SHIFT) || k == KeyCode::BackTab),
            Key::Shift(k) => plain && ev.code == k && m.contains(KeyModifiers::SHIFT),
        }
    }
}

/// When a status-line hint shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// In its mode, always.
    Always,
    /// Only on the timeline (no list panel open).
    Timeline,
    /// Only while a list panel is open.
    List,
    /// Only while an event is selected.
    EventSelected,
    /// Only while a search is active.
    SearchActive,
    /// Only when the trace has a steady-state window.
    Steady,
    /// Only in the two-run view (`diff --view`).
    Pair,
    /// Only when the trace has GPU metrics beyond the key ones.
    Metrics,
}

/// A status-line hint: `keys what`, kept by priority when space is short.
#[derive(Debug, Clone, Copy)]
pub struct Hint {
    /// Keys as shown on the status line (`w/s`).
    pub keys: &'static str,
    /// One word or two.
    pub what: &'static str,
    /// Lower shows first when space is short (0..=5).
    pub prio: u8,
    /// Position on the line (ascending).
    pub order: u8,
    /// When it shows.
    pub when: When,
}

/// One line of the key table.
#[derive(Debug)]
pub struct Binding {
    /// Keys as shown in help and the README (empty: folded into the line above).
    pub label: &'static str,
    /// Keys that trigger it.
    pub keys: &'static [Key],
    /// What it does.
    pub action: Action,
    /// Help text.
    pub help: &'static str,
    /// Status-line hint, if it has one.
    pub hint: Option<Hint>,
}

/// A titled part of the key table.
#[derive(Debug)]
pub struct Section {
    /// Title shown in help and the README.
    pub title: &'static str,
    /// Bindings.
    pub bindings: &'static [Binding],
}

const fn b(label: &'static str, keys: &'static [Key], action: Action, help: &'static str) -> Binding {
    Binding { label, keys, action, help, hint: None }
}

const fn h(
    label: &'static str,
    keys: &'static [Key],
    action: Action,
    help: &'static str,
    hint: (&'static str, &'static str, u8, u8, When),
) -> Binding {
    let (keys_hint, what, prio, order, when) = hint;
    Binding { label, keys, action, help, hint: Some(Hint { keys: keys_hint, what, prio, order, when }) }
}

use Key::{Char as C, Code as K, Ctrl, Shift as S};
use When::{Always, EventSelected, List, Metrics, Pair, SearchActive, Steady, Timeline};

/// Keys that work everywhere (except while typing a search).
pub(super) const GLOBAL: &[Section] = &[
    Section {
        title: "Time",
        bindings: &[
            h(
                "w +",
                &[C('w'), C('+'), C('=')],
                Action::ZoomIn,
                "zoom in around the cursor",
                ("w/s", "zoom", 2, 10, Always),
            ),
            b("s -", &[C('s'), C('-'), C('_')], Action::ZoomOut, "zoom out around the cursor"),
            h(
                "a h ←",
                &[C('a'), C('h'), K(KeyCode::Left)],
                Action::PanLeft,
                "pan back (cursor moves with the view)",
                ("a/d", "pan", 2, 11, Always),
            ),
            b("d l →", &[C('d'), C('l'), K(KeyCode::Right)], Action::PanRight, "pan forward"),
            b("PgUp", &[K(KeyCode::PageUp)], Action::PageLeft, "pan a whole screen back"),
            b("PgDn", &[K(KeyCode::PageDown)], Action::PageRight, "pan a whole screen forward"),
            b("A H S-←", &[C('A'), C('H'), S(KeyCode::Left)], Action::CursorLeft, "move the cursor one cell back"),
            b("D L S-→", &[C('D'), C('L'), S(KeyCode::Right)], Action::CursorRight, "move the cursor one cell forward"),
            b("0 Home", &[C('0'), K(KeyCode::Home)], Action::FitAll, "fit the whole trace"),
            h(
                "F",
                &[C('F')],
                Action::FitSteady,
                "fit the steady state (steps after the 1st)",
                ("F", "steady", 5, 27, Steady),
            ),
            b("$ End", &[C('$'), K(KeyCode::End)], Action::ViewEnd, "go to the end of the trace"),
            h(
                "f",
                &[C('f')],
                Action::FitSelection,
                "fit the selection (or mark..cursor)",
                ("f", "fit", 4, 15, EventSelected),
            ),
            h("m", &[C('m')], Action::Mark, "set the mark at the cursor / clear it", ("m", "mark", 5, 22, Always)),
        ],
    },
    Section {
        title: "Lanes",
        bindings: &[
            h(
                "j ↓",
                &[C('j'), K(KeyCode::Down)],
                Action::LaneDown,
                "focus the next lane",
                ("j/k", "lane", 3, 12, Timeline),
            ),
            b("k ↑", &[C('k'), K(KeyCode::Up)], Action::LaneUp, "focus the previous lane"),
            b("C-d C-u", &[Ctrl('d')], Action::LanePageDown, "scroll lanes a page down / up"),
            b("", &[Ctrl('u')], Action::LanePageUp, "scroll lanes a page up"),
            b("Space z", &[C(' '), C('z')], Action::ToggleGroup, "collapse / expand the focused group"),
            b("Z", &[C('Z')], Action::ToggleAllGroups, "collapse / expand all groups"),
            b("t", &[C('t')], Action::Pin, "pin the focused lane to the top / unpin"),
            h(
                "M",
                &[C('M')],
                Action::ToggleMetrics,
                "GPU metrics: all rows / PCIe and SMs only",
                ("M", "metrics", 5, 25, Metrics),
            ),
        ],
    },
    Section {
        title: "Events",
        bindings: &[
            b("Tab .", &[K(KeyCode::Tab), C('.')], Action::NextEvent, "next event in the focused lane"),
            b("S-Tab ,", &[K(KeyCode::BackTab), C(',')], Action::PrevEvent, "previous event in the focused lane"),
            h(
                "Enter",
                &[K(KeyCode::Enter)],
                Action::Select,
                "select the event under the cursor: details",
                ("Enter", "select", 3, 13, Timeline),
            ),
            h(
                "c",
                &[C('c')],
                Action::Jump,
                "jump between GPU op and its API call",
                ("c", "call↔op", 3, 14, EventSelected),
            ),
            b("i", &[C('i')], Action::Details, "show / hide the details panel"),
            h("/", &[C('/')], Action::Search, "search names (Enter runs, Esc cancels)", ("/", "search", 4, 20, Always)),
            h(
                "n N",
                &[C('n')],
                Action::NextMatch,
                "next / previous search match",
                ("n/N", "match", 3, 21, SearchActive),
            ),
            b("", &[C('N')], Action::PrevMatch, "previous search match"),
        ],
    },
    Section {
        title: "Gaps and phases",
        bindings: &[
            h(
                "]",
                &[C(']')],
                Action::NextGap,
                "next idle gap ≥ threshold, zoomed to it",
                ("]/[", "gap", 1, 16, Always),
            ),
            b("[", &[C('[')], Action::PrevGap, "previous idle gap ≥ threshold"),
            b("r", &[C('r')], Action::NextRank, "focus the next rank's GPU (several ranks)"),
            h("g", &[C('g')], Action::GapList, "gap list, longest first, with cause", ("g", "gaps", 4, 18, Always)),
            h(
                "> <",
                &[C('>')],
                Action::ThresholdUp,
                "double / halve the gap threshold",
                ("</>", "threshold", 5, 17, Always),
            ),
            b("", &[C('<')], Action::ThresholdDown, "halve the gap threshold"),
            h("p", &[C('p')], Action::Phases, "per-phase table (NVTX ranges)", ("p", "phases", 4, 19, Always)),
            h(
                "B",
                &[C('B')],
                Action::Steps,
                "step budget: a bar per step, GPU busy and idle by cause (Enter zooms)",
                ("B", "steps", 5, 28, Always),
            ),
        ],
    },
    Section {
        title: "General",
        bindings: &[
            h("?", &[C('?'), K(KeyCode::F(1))], Action::Help, "this help", ("?", "help", 0, 23, Always)),
            h(
                "Esc",
                &[K(KeyCode::Esc)],
                Action::Back,
                "close the panel, else clear the selection or mark",
                ("Esc", "close", 1, 3, List),
            ),
            h("q Ctrl-C", &[C('q'), Ctrl('c')], Action::Quit, "quit", ("q", "quit", 1, 24, Always)),
            b("Ctrl-Z", &[Ctrl('z')], Action::Suspend, "suspend to the shell (fg resumes)"),
        ],
    },
];

/// Keys of the two-run view (`lanescope diff A B --view`), tried after the local keys;
/// every other key goes to the focused run.
pub(super) const PAIR: Section = Section {
    title: "Two runs (diff --view)",
    bindings: &[
        h(
            "} {",
            &[C('}')],
            Action::NextStep,
            "align both runs at the next / previous step",
            ("}/{", "step", 1, 4, Pair),
        ),
        b("", &[C('{')], Action::PrevStep, "align both runs at the previous step"),
        h(
            "b",
            &[C('b')],
            Action::SwitchRun,
            "focus the other run (keys act on the focused run)",
            ("b", "run", 1, 5, Pair),
        ),
        h(
            "v",
            &[C('v')],
            Action::ToggleAlign,
            "align at the step / each run from its own start",
            ("v", "align", 4, 6, Pair),
        ),
        h("P", &[C('P')], Action::DeltaPanel, "per-phase delta table and verdict", ("P", "deltas", 3, 7, Pair)),
    ],
};

/// Keys of the gap list and the phase table, tried before the global keys.
pub(super) const LIST: Section = Section {
    title: "In the gap list (g), phase table (p) and step budget (B)",
    bindings: &[
        h(
            "j k ↓ ↑",
            &[C('j'), K(KeyCode::Down)],
            Action::ListDown,
            "move the highlight",
            ("j/k", "move", 0, 0, Always),
        ),
        b("", &[C('k'), K(KeyCode::Up)], Action::ListUp, "move up"),
        b("PgDn PgUp", &[K(KeyCode::PageDown)], Action::ListPageDown, "move a page"),
        b("", &[K(KeyCode::PageUp)], Action::ListPageUp, "move a page up"),
        b("Home End", &[K(KeyCode::Home)], Action::ListTop, "first / last row"),
        b("", &[K(KeyCode::End)], Action::ListBottom, "last row"),
        h(
            "Enter",
            &[K(KeyCode::Enter)],
            Action::ListEnter,
            "zoom to the gap, the phase's slowest instance, the step",
            ("Enter", "zoom", 0, 1, Always),
        ),
        h(
            "o O",
            &[C('o')],
            Action::SortNext,
            "sort by the next column / reverse (step budget: by wall / by start)",
            ("o", "sort", 2, 2, Always),
        ),
        b("", &[C('O')], Action::SortReverse, "reverse the sort"),
        b("1-9", &[], Action::SortColumn(0), "sort by column N (again: reverse)"),
    ],
};

/// Keys of the help screen, tried before the global keys.
pub(super) const HELP: Section = Section {
    title: "In this help",
    bindings: &[
        b("j k ↓ ↑", &[C('j'), K(KeyCode::Down)], Action::ListDown, "scroll"),
        b("", &[C('k'), K(KeyCode::Up)], Action::ListUp, "scroll up"),
        b("PgDn PgUp", &[K(KeyCode::PageDown), C(' ')], Action::ListPageDown, "scroll a page"),
        b("", &[K(KeyCode::PageUp)], Action::ListPageUp, "scroll a page up"),
        b("? Esc", &[C('?'), K(KeyCode::Esc)], Action::Help, "close"),
    ],
};

/// Keys of the search prompt (other characters are typed into it); no global keys.
pub(super) const SEARCH: Section = Section {
    title: "In the search prompt (/)",
    bindings: &[
        h(
            "Enter",
            &[K(KeyCode::Enter)],
            Action::SearchRun,
            "search (names contain the text, any case)",
            ("Enter", "search", 0, 0, Always),
        ),
        h("Esc", &[K(KeyCode::Esc)], Action::SearchCancel, "cancel", ("Esc", "cancel", 0, 1, Always)),
        b("Bksp C-u", &[K(KeyCode::Backspace)], Action::SearchBackspace, "delete a character / clear"),
        b("", &[Ctrl('u')], Action::SearchClear, "clear"),
        b("Ctrl-C", &[Ctrl('c')], Action::Quit, "quit"),
    ],
};

/// What the mouse does (SGR reporting; `--no-mouse` turns it off).
pub(super) const MOUSE: &[(&str, &str)] = &[
    ("wheel", "zoom in / out around the pointer"),
    ("S-wheel", "pan (also the horizontal wheel)"),
    ("click", "select the event or gap under the pointer"),
    ("drag ruler", "select a range: mark..cursor and its length"),
    ("click name", "collapse / expand a group, focus a lane"),
    ("click row", "in a list panel: select; again: zoom"),
    ("wheel list", "scroll a list panel or the help"),
    ("click run", "diff --view: focus the run clicked"),
];

/// Where keys go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The timeline (possibly with the details panel).
    Timeline,
    /// A list panel is open.
    List,
    /// The help is open.
    Help,
    /// The search prompt is open.
    Search,
}

impl Mode {
    /// The section tried before the global keys (the only one while searching).
    pub fn local(self) -> Option<&'static Section> {
        match self {
            Mode::Timeline => None,
            Mode::List => Some(&LIST),
            Mode::Help => Some(&HELP),
            Mode::Search => Some(&SEARCH),
        }
    }

    fn global(self) -> &'static [Section] {
        if self == Mode::Search { &[] } else { GLOBAL }
    }
}

/// Every section, in help order.
pub(super) fn sections() -> impl Iterator<Item = &'static Section> {
    GLOBAL.iter().chain([&PAIR, &LIST, &HELP, &SEARCH])
}

fn find(section: &Section, ev: &KeyEvent) -> Option<Action> {
    section.bindings.iter().find(|b| b.keys.iter().any(|k| k.matches(ev))).map(|b| b.action)
}

/// The action bound to `ev` in `mode`.
pub(super) fn action(mode: Mode, ev: &KeyEvent) -> Option<Action> {
    let local = mode.local().and_then(|s| find(s, ev)).or_else(|| match (mode, ev.code) {
        (Mode::List, KeyCode::Char(c @ '1'..='9'))
            if !ev.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
        {
            Some(Action::SortColumn(c as u8 - b'0'))
        }
        _ => None,
    });
    local.or_else(|| mode.global().iter().find_map(|s| find(s, ev)))
}

/// The two-run view's action bound to `ev` in the focused run's `mode`: never while
/// typing a search or reading the help, nor for a key the mode binds itself.
pub(super) fn pair_action(mode: Mode, ev: &KeyEvent) -> Option<Action> {
    if matches!(mode, Mode::Search | Mode::Help) || mode.local().and_then(|s| find(s, ev)).is_some() {
        return None;
    }
    find(&PAIR, ev)
}

/// Facts that decide which hints show.
#[derive(Debug, Clone, Copy, Default)]
#[expect(clippy::struct_excessive_bools, reason = "one flag per `When` condition, read only by `hints`")]
pub(crate) struct Facts {
    /// An event is selected.
    pub event_selected: bool,
    /// A search is active.
    pub search_active: bool,
    /// The trace has a steady-state window.
    pub steady: bool,
    /// The run is shown in the two-run view.
    pub pair: bool,
    /// The trace has GPU metrics beyond the key ones.
    pub metrics: bool,
}

/// Status-line hints for `mode`: (keys, what, priority), in line order.
pub(super) fn hints(mode: Mode, facts: Facts) -> Vec<(&'static str, &'static str, u8)> {
    let holds = |w: When| match w {
        Always => true,
        Timeline => mode != Mode::List,
        List => mode == Mode::List,
        EventSelected => facts.event_selected,
        SearchActive => facts.search_active,
        Steady => facts.steady,
        Pair => facts.pair,
        Metrics => facts.metrics,
    };
    let pair = (mode != Mode::Search).then_some(&PAIR);
    let mut out: Vec<Hint> = mode
        .local()
        .into_iter()
        .chain(mode.global())
        .chain(pair)
        .flat_map(|s| s.bindings.iter())
        .filter_map(|b| b.hint)
        .filter(|h| holds(h.when))
        .collect();
    out.sort_by_key(|h| h.order);
    out.into_iter().map(|h| (h.keys, h.what, h.prio)).collect()
}

#[cfg(test)]
fn md_keys(label: &str) -> String {
    label.split(' ').map(|k| format!("`{k}`")).collect::<Vec<_>>().join(" ")
}

/// The README's key table (and mouse table), generated from the key table.
#[cfg(test)]
fn markdown() -> String {
    use std::fmt::Write as _;
    let mut out = String::from("| area | keys |\n|---|---|\n");
    for s in sections() {
        let items: Vec<String> = s
            .bindings
            .iter()
            .filter(|b| !b.label.is_empty())
            .map(|b| format!("{} {}", md_keys(b.label), b.help))
            .collect();
        let _ = writeln!(out, "| {} | {} |", s.title, items.join("; "));
    }
    out.push_str("\n| mouse | does |\n|---|---|\n");
    for (m, what) in MOUSE {
        let _ = writeln!(out, "| {m} | {what} |");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    #[test]
    fn keys_resolve_by_mode() {
        let j = key(KeyCode::Char('j'), KeyModifiers::NONE);
        assert_eq!(action(Mode::Timeline, &j), Some(Action::LaneDown));
        assert_eq!(action(Mode::List, &j), Some(Action::ListDown));
        assert_eq!(action(Mode::Timeline, &key(KeyCode::Char('c'), KeyModifiers::CONTROL)), Some(Action::Quit));
        assert_eq!(action(Mode::Timeline, &key(KeyCode::Char('c'), KeyModifiers::NONE)), Some(Action::Jump));
        assert_eq!(action(Mode::Timeline, &key(KeyCode::Char('A'), KeyModifiers::SHIFT)), Some(Action::CursorLeft));
        assert_eq!(action(Mode::Timeline, &key(KeyCode::Left, KeyModifiers::SHIFT)), Some(Action::CursorLeft));
        assert_eq!(action(Mode::Timeline, &key(KeyCode::Left, KeyModifiers::NONE)), Some(Action::PanLeft));
        // PgDn/PgUp move time a screen at a time (Perfetto, Nsight); Ctrl-D/U page the lanes.
        assert_eq!(action(Mode::Timeline, &key(KeyCode::PageDown, KeyModifiers::NONE)), Some(Action::PageRight));
        assert_eq!(action(Mode::Timeline, &key(KeyCode::PageUp, KeyModifiers::NONE)), Some(Action::PageLeft));
        assert_eq!(action(Mode::Timeline, &key(KeyCode::Char('d'), KeyModifiers::CONTROL)), Some(Action::LanePageDown));
        assert_eq!(action(Mode::List, &key(KeyCode::PageDown, KeyModifiers::NONE)), Some(Action::ListPageDown));
        assert_eq!(action(Mode::Timeline, &key(KeyCode::BackTab, KeyModifiers::SHIFT)), Some(Action::PrevEvent));
        assert_eq!(action(Mode::List, &key(KeyCode::Char('3'), KeyModifiers::NONE)), Some(Action::SortColumn(3)));
        assert_eq!(action(Mode::Help, &key(KeyCode::Esc, KeyModifiers::NONE)), Some(Action::Help));
    }

    #[test]
    fn pair_keys_resolve_outside_search_and_help_and_never_shadow_a_key() {
        let brace = key(KeyCode::Char('}'), KeyModifiers::NONE);
        assert_eq!(pair_action(Mode::Timeline, &brace), Some(Action::NextStep));
        assert_eq!(pair_action(Mode::List, &brace), Some(Action::NextStep));
        assert_eq!(pair_action(Mode::Search, &brace), None);
        assert_eq!(pair_action(Mode::Help, &brace), None);
        for b in PAIR.bindings {
            for k in b.keys {
                let Key::Char(c) = *k else { continue };
                let ev = key(KeyCode::Char(c), KeyModifiers::NONE);
                for m in [Mode::Timeline, Mode::List] {
                    assert_eq!(action(m, &ev), None, "{c} is bound in {m:?} and in the two-run view");
                }
            }
        }
        let t = hints(Mode::Timeline, Facts { pair: true, ..Facts::default() });
        assert!(t.iter().any(|h| h.1 == "step") && t.iter().any(|h| h.1 == "run"));
        assert!(!hints(Mode::Timeline, Facts::default()).iter().any(|h| h.1 == "step"));
    }

    #[test]
    fn every_action_of_the_tables_has_help() {
        for s in sections() {
            for b in s.bindings {
                assert!(!b.help.is_empty());
            }
        }
    }

    #[test]
    fn search_mode_has_no_global_keys() {
        assert_eq!(action(Mode::Search, &key(KeyCode::Char('q'), KeyModifiers::NONE)), None);
        assert_eq!(action(Mode::Search, &key(KeyCode::Esc, KeyModifiers::NONE)), Some(Action::SearchCancel));
        assert_eq!(action(Mode::Search, &key(KeyCode::Char('c'), KeyModifiers::CONTROL)), Some(Action::Quit));
    }

    #[test]
    fn hints_follow_the_mode() {
        let t = hints(Mode::Timeline, Facts::default());
        assert_eq!(t.first().map(|h| h.0), Some("w/s"));
        assert!(t.iter().any(|h| h.1 == "lane") && !t.iter().any(|h| h.1 == "move" || h.1 == "steady"));
        let l = hints(Mode::List, Facts { steady: true, ..Facts::default() });
        assert_eq!(l.iter().take(4).map(|h| h.1).collect::<Vec<_>>(), ["move", "zoom", "sort", "close"]);
        assert!(l.iter().any(|h| h.1 == "steady"));
    }

    /// The README's key table is generated: run this test and paste its output
    /// between the markers when a key changes.
    #[test]
    fn readme_key_table_equals_the_key_table() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README");
        let (begin, end) = ("<!-- keys:begin (generated from src/tui/input.rs) -->\n", "<!-- keys:end -->");
        let a = readme.find(begin).expect("README has the keys:begin marker") + begin.len();
        let b = readme[a..].find(end).expect("README has the keys:end marker") + a;
        assert_eq!(readme[a..b], markdown(), "README key table differs; expected:\n{}", markdown());
    }
}
