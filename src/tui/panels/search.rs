//! Name search: the `/` prompt (its keys are the key table's search section; other
//! characters are typed), and the active query: a set of interned-name ids, then per
//! lane the sorted rows whose name is in the set. Frames only binary-search those rows.

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::model::{LaneKind, Trace};
use crate::tui::app::App;
use crate::tui::input::{self, Action, Facts, Mode};
use crate::tui::text;

/// Longest query the prompt takes, in characters.
const MAX_QUERY: usize = 200;

/// The state of the search.
#[derive(Debug, Clone, Default)]
pub struct Search {
    /// Text being typed after `/`, when the prompt is open.
    pub input: Option<String>,
    /// The active query (empty: none).
    pub query: String,
    /// Per lane, sorted rows whose name matches.
    pub matches: Vec<Vec<u32>>,
    /// Total number of matching events.
    pub total: usize,
}

impl Search {
    /// Run `query` (case-insensitive substring of the name, or of a kernel's demangled name).
    pub fn run(trace: &Trace, query: &str) -> Self {
        let q = query.to_lowercase();
        let mut hit = vec![false; trace.strings.len()];
        if !q.is_empty() {
            for (id, s) in trace.strings.iter() {
                hit[id as usize] = s.to_lowercase().contains(&q);
            }
        }
        let is_hit = |id: u64| hit.get(id as usize).copied().unwrap_or(false);
        let mut total = 0;
        let matches: Vec<Vec<u32>> = trace
            .lanes
            .iter()
            .map(|l| {
                let kernels = matches!(l.kind, LaneKind::Kernels { .. });
                let v: Vec<u32> = (0..l.ev.len())
                    .filter(|&i| is_hit(u64::from(l.ev.name[i])) || (kernels && is_hit(l.ev.aux(i))))
                    .map(|i| i as u32)
                    .collect();
                total += v.len();
                v
            })
            .collect();
        Self { input: None, query: query.to_string(), matches, total }
    }

    /// True when a query is active.
    pub fn active(&self) -> bool {
        !self.query.is_empty()
    }

    /// Matching rows of `lane`, if a query is active.
    pub fn lane(&self, lane: usize) -> Option<&[u32]> {
        if self.active() { self.matches.get(lane).map(Vec::as_slice) } else { None }
    }
}

impl Search {
    /// Open the prompt.
    pub fn open_prompt(&mut self) {
        self.input = Some(String::new());
    }

    /// Handle a key while the prompt is open: the query to run when Enter was pressed,
    /// and whether the user asked to quit.
    pub fn on_key(&mut self, key: &KeyEvent) -> (Option<String>, bool) {
        let Some(buf) = self.input.as_mut() else { return (None, false) };
        match input::action(Mode::Search, key) {
            Some(Action::SearchRun) => return (self.input.take(), false),
            Some(Action::SearchCancel) => self.input = None,
            Some(Action::SearchClear) => buf.clear(),
            Some(Action::SearchBackspace) => {
                buf.pop();
            }
            Some(Action::Quit) => return (None, true),
            Some(_) => {}
            None => {
                let plain = !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
                if let KeyCode::Char(c) = key.code
                    && plain
                    && buf.chars().count() < MAX_QUERY
                {
                    buf.push(c);
                }
            }
        }
        (None, false)
    }
}

/// Draw the prompt on the last row of `area` (the status lines).
pub fn render_prompt(frame: &mut Frame, app: &App, area: Rect, q: &str) {
    let theme = app.theme;
    let hints: Vec<String> =
        input::hints(Mode::Search, Facts::default()).iter().map(|(k, what, _)| format!("{k} {what}")).collect();
    let prompt = Line::from(vec![
        Span::styled("/", theme.key()),
        Span::raw(text::clean(q).into_owned()),
        Span::styled("█", theme.key()),
        Span::styled(format!("   {} · names contain the text, any case", hints.join(" · ")), theme.dim()),
    ]);
    frame.render_widget(prompt, Rect { height: 1, y: area.y + area.height - 1, ..area });
}
