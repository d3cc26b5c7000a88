//! Keys to actions: one table drives both dispatch and the `?` help.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

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

/// One line of the key table.
#[derive(Debug)]
pub struct Binding {
    /// Keys as shown in help.
    pub label: &'static str,
    /// Keys that trigger it.
    pub keys: &'static [Key],
    /// What it does.
    pub action: Action,
    /// Help text.
    pub help: &'static str,
}

/// A titled part of the key table.
#[derive(Debug)]
pub struct Section {
    /// Title shown in help.
    pub title: &'static str,
    /// Bindings.
    pub bindings: &'static [Binding],
}

const fn b(label: &'static str, keys: &'static [Key], action: Action, help: &'static str) -> Binding {
    Binding { label, keys, action, help }
}

use Key::{Char as C, Code as K, Ctrl, Shift as S};

/// Keys that work everywhere (except while typing a search).
pub const GLOBAL: &[Section] = &[
    Section {
        title: "Time",
        bindings: &[
            b("w +", &[C('w'), C('+'), C('=')], Action::ZoomIn, "zoom in around the cursor"),
            b("s -", &[C('s'), C('-'), C('_')], Action::ZoomOut, "zoom out around the cursor"),
            b("a h ←", &[C('a'), C('h'), K(KeyCode::Left)], Action::PanLeft, "pan back (cursor moves with the view)"),
            b("d l →", &[C('d'), C('l'), K(KeyCode::Right)], Action::PanRight, "pan forward"),
            b("PgUp", &[K(KeyCode::PageUp)], Action::PageLeft, "pan a whole screen back"),
            b("PgDn", &[K(KeyCode::PageDown)], Action::PageRight, "pan a whole screen forward"),
            b("A H S-←", &[C('A'), C('H'), S(KeyCode::Left)], Action::CursorLeft, "move the cursor one cell back"),
            b("D L S-→", &[C('D'), C('L'), S(KeyCode::Right)], Action::CursorRight, "move the cursor one cell forward"),
            b("0 Home", &[C('0'), K(KeyCode::Home)], Action::FitAll, "fit the whole trace"),
            b("$ End", &[C('$'), K(KeyCode::End)], Action::ViewEnd, "go to the end of the trace"),
            b("f", &[C('f')], Action::FitSelection, "fit the selection (or mark..cursor)"),
            b("m", &[C('m')], Action::Mark, "set the mark at the cursor / clear it"),
        ],
    },
    Section {
        title: "Lanes",
        bindings: &[
            b("j ↓", &[C('j'), K(KeyCode::Down)], Action::LaneDown, "focus the next lane"),
            b("k ↑", &[C('k'), K(KeyCode::Up)], Action::LaneUp, "focus the previous lane"),
            b("C-d C-u", &[Ctrl('d')], Action::LanePageDown, "scroll lanes a page down / up"),
            b("", &[Ctrl('u')], Action::LanePageUp, "scroll lanes a page up"),
            b("Space z", &[C(' '), C('z')], Action::ToggleGroup, "collapse / expand the focused group"),
            b("Z", &[C('Z')], Action::ToggleAllGroups, "collapse / expand all groups"),
            b("t", &[C('t')], Action::Pin, "pin the focused lane to the top / unpin"),
        ],
    },
    Section {
        title: "Events",
        bindings: &[
            b("Tab .", &[K(KeyCode::Tab), C('.')], Action::NextEvent, "next event in the focused lane"),
            b("S-Tab ,", &[K(KeyCode::BackTab), C(',')], Action::PrevEvent, "previous event in the focused lane"),
            b("Enter", &[K(KeyCode::Enter)], Action::Select, "select the event under the cursor: details"),
            b("c", &[C('c')], Action::Jump, "jump between GPU op and its API call"),
            b("i", &[C('i')], Action::Details, "show / hide the details panel"),
            b("/", &[C('/')], Action::Search, "search names (Enter runs, Esc cancels)"),
            b("n N", &[C('n')], Action::NextMatch, "next / previous search match"),
            b("", &[C('N')], Action::PrevMatch, "previous search match"),
        ],
    },
    Section {
        title: "Gaps and phases",
        bindings: &[
            b("]", &[C(']')], Action::NextGap, "next idle gap ≥ threshold, zoomed to it"),
            b("[", &[C('[')], Action::PrevGap, "previous idle gap ≥ threshold"),
            b("g", &[C('g')], Action::GapList, "gap list, longest first, with cause"),
            b("> <", &[C('>')], Action::ThresholdUp, "double / halve the gap threshold"),
            b("", &[C('<')], Action::ThresholdDown, "halve the gap threshold"),
            b("p", &[C('p')], Action::Phases, "per-phase table (NVTX ranges)"),
        ],
    },
    Section {
        title: "General",
        bindings: &[
            b("?", &[C('?'), K(KeyCode::F(1))], Action::Help, "this help"),
            b("Esc", &[K(KeyCode::Esc)], Action::Back, "close the panel, or quit"),
            b("q Ctrl-C", &[C('q'), Ctrl('c')], Action::Quit, "quit"),
            b("Ctrl-Z", &[Ctrl('z')], Action::Suspend, "suspend to the shell (fg resumes)"),
        ],
    },
];

/// Keys of the gap list and the phase table, tried before the global keys.
pub const LIST: Section = Section {
    title: "In the gap list (g) and phase table (p)",
    bindings: &[
        b("j k ↓ ↑", &[C('j'), K(KeyCode::Down)], Action::ListDown, "move the highlight"),
        b("", &[C('k'), K(KeyCode::Up)], Action::ListUp, "move up"),
        b("PgDn PgUp", &[K(KeyCode::PageDown)], Action::ListPageDown, "move a page"),
        b("", &[K(KeyCode::PageUp)], Action::ListPageUp, "move a page up"),
        b("Home End", &[K(KeyCode::Home)], Action::ListTop, "first / last row"),
        b("", &[K(KeyCode::End)], Action::ListBottom, "last row"),
        b("Enter", &[K(KeyCode::Enter)], Action::ListEnter, "zoom to gap / phase's slowest instance"),
        b("o O", &[C('o')], Action::SortNext, "sort by the next column / reverse"),
        b("", &[C('O')], Action::SortReverse, "reverse the sort"),
        b("1-9", &[], Action::SortColumn(0), "sort by column N (again: reverse)"),
    ],
};

/// Keys of the help screen, tried before the global keys.
pub const HELP: Section = Section {
    title: "In this help",
    bindings: &[
        b("j k ↓ ↑", &[C('j'), K(KeyCode::Down)], Action::ListDown, "scroll"),
        b("", &[C('k'), K(KeyCode::Up)], Action::ListUp, "scroll up"),
        b("PgDn PgUp", &[K(KeyCode::PageDown), C(' ')], Action::ListPageDown, "scroll a page"),
        b("", &[K(KeyCode::PageUp)], Action::ListPageUp, "scroll a page up"),
        b("? Esc", &[C('?'), K(KeyCode::Esc)], Action::Help, "close"),
    ],
};

/// Where keys go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The timeline (possibly with the details panel).
    Timeline,
    /// A list panel is open.
    List,
    /// The help is open.
    Help,
}

fn find(section: &Section, ev: &KeyEvent) -> Option<Action> {
    section.bindings.iter().find(|b| b.keys.iter().any(|k| k.matches(ev))).map(|b| b.action)
}

/// The action bound to `ev` in `mode`.
pub fn action(mode: Mode, ev: &KeyEvent) -> Option<Action> {
    let local = match mode {
        Mode::Timeline => None,
        Mode::List => find(&LIST, ev).or_else(|| match ev.code {
            KeyCode::Char(c @ '1'..='9') if !ev.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) => {
                Some(Action::SortColumn(c as u8 - b'0'))
            }
            _ => None,
        }),
        Mode::Help => find(&HELP, ev),
    };
    local.or_else(|| GLOBAL.iter().find_map(|s| find(s, ev)))
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
    fn every_action_of_the_tables_has_help() {
        for s in GLOBAL.iter().chain([&LIST, &HELP]) {
            for b in s.bindings {
                assert!(!b.help.is_empty());
            }
        }
    }
}
