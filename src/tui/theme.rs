//! Colours and glyphs. Glyphs never depend on the colour depth, so every state reads
//! on a 16-colour or `NO_COLOR` terminal; colours only add to them.

use ratatui::style::{Color, Modifier, Style};

use crate::model::{ApiKind, Lane, LaneKind, MemClass, MemFlags, StrId};

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

/// What an event is, for its glyph and colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A kernel or a graph execution.
    Kernel,
    /// A memory operation on pinned or device memory.
    Memory(MemClass),
    /// A copy from or to pageable host memory.
    Pageable,
    /// An NVTX range.
    Nvtx,
    /// An NVTX mark (instant).
    Mark,
    /// A kernel launch call.
    Launch,
    /// A call that blocks the thread: synchronize or synchronous copy.
    Sync,
    /// An asynchronous copy or memset call.
    CopyCall,
    /// Any other CUDA call.
    Api,
    /// An OS runtime call.
    Osrt,
    /// Profiler overhead (nsys's own stalls).
    Overhead,
    /// A thread running on a CPU.
    OnCpu,
    /// A CPU sample (instant).
    Sample,
}

/// Classify event `i` of `lane`.
pub(crate) fn classify(lane: &Lane, i: usize) -> Class {
    match lane.kind {
        LaneKind::Kernels { .. } | LaneKind::Graphs { .. } => Class::Kernel,
        LaneKind::Memory { class, .. } => {
            if MemFlags::unpack(lane.ev.flags(i)).is_pageable() {
                Class::Pageable
            } else {
                Class::Memory(class)
            }
        }
        LaneKind::Nvtx { .. } | LaneKind::NvtxStartEnd { .. } | LaneKind::GpuRanges { .. } => Class::Nvtx,
        LaneKind::NvtxMarks { .. } => Class::Mark,
        LaneKind::CudaApi { .. } => match ApiKind::from_flags(lane.ev.flags(i)) {
            ApiKind::Launch => Class::Launch,
            ApiKind::Sync | ApiKind::MemcpySync => Class::Sync,
            ApiKind::MemcpyAsync | ApiKind::Memset => Class::CopyCall,
            ApiKind::Other => Class::Api,
        },
        LaneKind::Osrt { .. } => Class::Osrt,
        LaneKind::Overhead { .. } => Class::Overhead,
        LaneKind::OnCpu { .. } => Class::OnCpu,
        LaneKind::Samples { .. } => Class::Sample,
    }
}

/// Glyphs of the timeline.
pub(crate) mod glyph {
    /// Busy shades from empty to full.
    pub(crate) const SHADES: [char; 4] = ['░', '▒', '▓', '█'];
    /// A copy from or to pageable memory.
    pub(crate) const PAGEABLE: char = '▚';
    /// A call that blocks its thread.
    pub(crate) const SYNC: char = '═';
    /// An instant.
    pub(crate) const MARK: char = '│';
    /// GPU copying with no kernel running (more than half the cell).
    pub(crate) const COPY_ONLY: char = '▄';
    /// GPU copying with no kernel running (less than half the cell).
    pub(crate) const COPY_ONLY_LOW: char = '▂';
    /// An idle gap at least as long as the threshold.
    pub(crate) const GAP: char = '×';
    /// A GPU mostly waiting inside a collective for another rank (busy for nsys, idle in truth).
    pub(crate) const COLLECTIVE_WAIT: char = '≈';
    /// The cursor in the ruler.
    pub(crate) const CURSOR: char = '▼';
    /// The mark in the ruler.
    pub(crate) const MARK_POS: char = 'M';
    /// Start of the steady-state window on the ruler.
    pub(crate) const STEADY_START: char = '[';
    /// End of the steady-state window on the ruler.
    pub(crate) const STEADY_END: char = ']';

    /// Bars of a counter row, one eighth to full.
    pub(crate) const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    /// A counter cell with no sample inside (zoomed in past the sampling period).
    pub(crate) const NO_SAMPLE: char = '·';

    /// Bar for `value` on a scale whose top is `full`, to the nearest eighth; blank at
    /// zero, and anything above zero shows.
    pub(crate) fn bar(value: f64, full: f64) -> char {
        if value <= 0.0 || full <= 0.0 {
            return ' ';
        }
        let eighths = (value / full * 8.0).round().clamp(1.0, 8.0) as usize;
        BARS[eighths - 1]
    }

    /// Shade for a busy share in `[0, 1]` (anything above zero shows).
    pub(crate) fn shade(busy: f32) -> char {
        if busy >= 0.875 {
            SHADES[3]
        } else if busy >= 0.5 {
            SHADES[2]
        } else if busy >= 0.25 {
            SHADES[1]
        } else {
            SHADES[0]
        }
    }
}

/// Glyph of a cell holding events of class `class` covering `busy` of it.
pub(crate) fn cell_glyph(class: Class, busy: f32) -> char {
    match class {
        Class::Pageable => glyph::PAGEABLE,
        Class::Sync => glyph::SYNC,
        Class::Mark | Class::Sample => glyph::MARK,
        _ => glyph::shade(busy),
    }
}

/// The colour scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Colour depth.
    pub depth: Depth,
}

const KERNEL_256: [u8; 6] = [71, 72, 107, 114, 78, 115];
const NVTX_256: [u8; 6] = [179, 180, 186, 222, 216, 144];

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
        let pick = |p: &[u8; 6]| p[(name.wrapping_mul(2_654_435_761) >> 29) as usize % p.len()];
        match class {
            Class::Kernel => self.fg(pick(&KERNEL_256), Color::Green),
            Class::Memory(MemClass::H2D) => self.fg(75, Color::Blue),
            Class::Memory(MemClass::D2H) => self.fg(141, Color::Magenta),
            Class::Memory(MemClass::Memset) => self.fg(247, Color::Gray),
            Class::Memory(_) => self.fg(110, Color::Cyan),
            Class::Pageable => self.fg(208, Color::LightRed),
            Class::Nvtx => self.fg(pick(&NVTX_256), Color::Yellow),
            Class::Mark => self.fg(227, Color::LightYellow),
            Class::Launch => self.fg(117, Color::Cyan),
            Class::Sync => self.fg(203, Color::Red),
            Class::CopyCall => self.fg(111, Color::LightBlue),
            Class::Api => self.fg(250, Color::White),
            Class::Osrt => self.fg(244, Color::DarkGray),
            Class::Overhead => self.fg(96, Color::Magenta),
            Class::OnCpu => self.fg(108, Color::Green),
            Class::Sample => self.fg(139, Color::Magenta),
        }
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
        self.fg(78, Color::Green)
    }

    /// Copies with no kernel on the GPU overview row.
    pub fn gpu_copy(self) -> Style {
        self.fg(75, Color::Blue)
    }

    /// A GPU metric row other than PCIe RX, TX and SMs Active.
    pub fn counter(self) -> Style {
        self.fg(110, Color::Cyan)
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
