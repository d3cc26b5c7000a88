//! The viewer's styles: the lanes' palette (`view::palette`: classes, glyphs, colours as
//! data) as ratatui styles at the terminal's depth, and the colours of the chrome.
//! Glyphs never depend on the colour depth, so every state reads on a 16-colour or
//! `NO_COLOR` terminal; colours only add to them.

use ratatui::style::{Color, Modifier, Style};

use crate::model::StrId;
use crate::view::palette::{self, Ansi, Class, Colour};

/// How many colours the terminal shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// No colour at all (`NO_COLOR`).
    Mono,
    /// The 16 ANSI colours.
    Ansi16,
    /// The 256-colour palette.
    Ansi256,
}

/// The colour scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Colour depth.
    pub depth: Depth,
}

impl Theme {
    /// Pick the depth from the environment: `NO_COLOR`, then `COLORTERM`/`TERM`.
    pub fn from_env() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let colorterm = std::env::var("COLORTERM").unwrap_or_default();
        let term = std::env::var("TERM").unwrap_or_default();
        let depth = if no_color || term == "dumb" {
            Depth::Mono
        } else if colorterm.contains("truecolor") || colorterm.contains("24bit") || term.contains("256") {
            Depth::Ansi256
        } else {
            Depth::Ansi16
        };
        Self { depth }
    }

    /// A theme of the given depth.
    pub fn new(depth: Depth) -> Self {
        Self { depth }
    }

    fn fg(self, c256: u8, c16: Color) -> Style {
        match self.depth {
            Depth::Mono => Style::new(),
            Depth::Ansi16 => Style::new().fg(c16),
            Depth::Ansi256 => Style::new().fg(Color::Indexed(c256)),
        }
    }

    /// Foreground of a palette colour.
    pub(crate) fn paint(self, c: Colour) -> Style {
        self.fg(c.c256, c.c16.into())
    }

    fn bg(self, c256: u8, c16: Color) -> Style {
        match self.depth {
            Depth::Mono => Style::new(),
            Depth::Ansi16 => Style::new().bg(c16),
            Depth::Ansi256 => Style::new().bg(Color::Indexed(c256)),
        }
    }

    /// True when colours are shown.
    pub fn colored(self) -> bool {
        self.depth != Depth::Mono
    }

    /// Glyph style of an event.
    pub fn event(self, class: Class, name: StrId) -> Style {
        self.paint(palette::event(class, name))
    }

    /// Style of a name written inside an event of style `glyph`.
    pub fn label(self, glyph: Style) -> Style {
        match (self.depth, glyph.fg) {
            (Depth::Mono, _) | (_, None) => Style::new().add_modifier(Modifier::REVERSED),
            (_, Some(c)) => Style::new().fg(Color::Black).bg(c),
        }
    }

    /// Kernels busy on the GPU overview row.
    pub fn gpu_busy(self) -> Style {
        self.paint(palette::GPU_BUSY)
    }

    /// Copies with no kernel on the GPU overview row.
    pub fn gpu_copy(self) -> Style {
        self.paint(palette::GPU_COPY)
    }

    /// A GPU metric row other than PCIe RX, TX and SMs Active.
    pub fn counter(self) -> Style {
        self.paint(palette::COUNTER)
    }

    /// An idle gap of at least the threshold.
    pub fn gap(self) -> Style {
        self.fg(203, Color::LightRed).patch(self.bg(52, Color::Reset))
    }

    /// The selected gap.
    pub fn gap_selected(self) -> Style {
        match self.depth {
            Depth::Mono => Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            _ => self.fg(231, Color::White).patch(self.bg(124, Color::Red)).add_modifier(Modifier::BOLD),
        }
    }

    /// Background tint of the selected gap across the lanes.
    pub fn gap_band(self) -> Style {
        self.bg(235, Color::Reset)
    }

    /// A cell holding a search match.
    pub fn matched(self) -> Style {
        match self.depth {
            Depth::Mono => Style::new().add_modifier(Modifier::UNDERLINED | Modifier::BOLD),
            _ => self.fg(16, Color::Black).patch(self.bg(220, Color::Yellow)),
        }
    }

    /// Cells of the selected event.
    pub fn selected(self) -> Style {
        match self.depth {
            Depth::Mono => Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            _ => self.fg(16, Color::Black).patch(self.bg(255, Color::White)).add_modifier(Modifier::BOLD),
        }
    }

    /// The cursor column across the lanes.
    pub fn cursor_column(self) -> Style {
        self.bg(238, Color::DarkGray)
    }

    /// The cursor cell of the focused lane.
    pub fn cursor_cell(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    /// The time between mark and cursor on the ruler.
    pub fn measured(self) -> Style {
        match self.depth {
            Depth::Mono => Style::new().add_modifier(Modifier::UNDERLINED),
            _ => self.bg(24, Color::Blue),
        }
    }

    /// The focused row's label.
    pub fn focus(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
    }

    /// A group header label.
    pub fn group(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    /// Secondary text.
    pub fn dim(self) -> Style {
        match self.depth {
            Depth::Mono => Style::new(),
            _ => self.fg(244, Color::DarkGray),
        }
    }

    /// Title bar and status bar.
    pub fn bar(self) -> Style {
        match self.depth {
            Depth::Mono => Style::new().add_modifier(Modifier::REVERSED),
            _ => self.fg(252, Color::White).patch(self.bg(236, Color::Blue)),
        }
    }

    /// A key name in hints and help.
    pub fn key(self) -> Style {
        self.fg(222, Color::Yellow).add_modifier(Modifier::BOLD)
    }

    /// A warning or error message.
    pub fn warn(self) -> Style {
        self.fg(203, Color::LightRed).add_modifier(Modifier::BOLD)
    }

    /// Panel borders.
    pub fn border(self) -> Style {
        self.fg(244, Color::DarkGray)
    }

    /// The highlighted row of a table.
    pub fn row_selected(self) -> Style {
        match self.depth {
            Depth::Mono => Style::new().add_modifier(Modifier::REVERSED),
            _ => self.bg(238, Color::DarkGray).add_modifier(Modifier::BOLD),
        }
    }
}

impl From<Ansi> for Color {
    fn from(c: Ansi) -> Self {
        match c {
            Ansi::Red => Color::Red,
            Ansi::Green => Color::Green,
            Ansi::Yellow => Color::Yellow,
            Ansi::Blue => Color::Blue,
            Ansi::Magenta => Color::Magenta,
            Ansi::Cyan => Color::Cyan,
            Ansi::Gray => Color::Gray,
            Ansi::DarkGray => Color::DarkGray,
            Ansi::LightRed => Color::LightRed,
            Ansi::LightYellow => Color::LightYellow,
            Ansi::LightBlue => Color::LightBlue,
            Ansi::White => Color::White,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MemClass;

    #[test]
    fn palette_colours_become_the_same_styles_at_each_depth() {
        let at = |depth| Theme::new(depth).event(Class::Memory(MemClass::H2D), 0);
        assert_eq!(at(Depth::Ansi256), Style::new().fg(Color::Indexed(75)));
        assert_eq!(at(Depth::Ansi16), Style::new().fg(Color::Blue));
        assert_eq!(at(Depth::Mono), Style::new());
        assert_eq!(Theme::new(Depth::Ansi16).event(Class::Osrt, 0), Style::new().fg(Color::DarkGray));
        assert_eq!(Theme::new(Depth::Ansi256).gpu_busy(), Style::new().fg(Color::Indexed(78)));
        assert_eq!(Theme::new(Depth::Ansi16).counter(), Style::new().fg(Color::Cyan));
    }
}
