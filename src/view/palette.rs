//! The lanes' palette as data: what class an event is, its glyph, and its colour at the
//! two depths a terminal may show. No drawing library here: the viewer turns a
//! [`Colour`] into its own style (`tui::theme`), the SVG writer reads the classes and
//! glyphs and keeps its own colours.

use crate::model::{ApiKind, Lane, LaneKind, MemClass, MemFlags, StrId};

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

/// One of the 16 ANSI colours (those the palette uses), named as terminals name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ansi {
    /// Red.
    Red,
    /// Green.
    Green,
    /// Yellow.
    Yellow,
    /// Blue.
    Blue,
    /// Magenta.
    Magenta,
    /// Cyan.
    Cyan,
    /// Light gray (ANSI white).
    Gray,
    /// Dark gray (ANSI bright black).
    DarkGray,
    /// Bright red.
    LightRed,
    /// Bright yellow.
    LightYellow,
    /// Bright blue.
    LightBlue,
    /// Bright white.
    White,
}

/// A colour at both depths: an index of the 256-colour palette and its 16-colour stand-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Colour {
    /// Index in the 256-colour palette.
    pub c256: u8,
    /// The nearest of the 16 ANSI colours.
    pub c16: Ansi,
}

const fn colour(c256: u8, c16: Ansi) -> Colour {
    Colour { c256, c16 }
}

const KERNEL_256: [u8; 6] = [71, 72, 107, 114, 78, 115];
const NVTX_256: [u8; 6] = [179, 180, 186, 222, 216, 144];

/// Kernels busy on a GPU's overview row.
pub(crate) const GPU_BUSY: Colour = colour(78, Ansi::Green);
/// Copies with no kernel on a GPU's overview row.
pub(crate) const GPU_COPY: Colour = colour(75, Ansi::Blue);
/// A GPU metric row other than PCIe RX, TX and SMs Active.
pub(crate) const COUNTER: Colour = colour(110, Ansi::Cyan);

/// Colour of an event of class `class` named `name`: kernels and NVTX ranges vary by
/// name within their hue, so neighbours with different names tell apart.
pub(crate) fn event(class: Class, name: StrId) -> Colour {
    let pick = |p: &[u8; 6]| p[(name.wrapping_mul(2_654_435_761) >> 29) as usize % p.len()];
    match class {
        Class::Kernel => colour(pick(&KERNEL_256), Ansi::Green),
        Class::Memory(MemClass::H2D) => colour(75, Ansi::Blue),
        Class::Memory(MemClass::D2H) => colour(141, Ansi::Magenta),
        Class::Memory(MemClass::Memset) => colour(247, Ansi::Gray),
        Class::Memory(_) => colour(110, Ansi::Cyan),
        Class::Pageable => colour(208, Ansi::LightRed),
        Class::Nvtx => colour(pick(&NVTX_256), Ansi::Yellow),
        Class::Mark => colour(227, Ansi::LightYellow),
        Class::Launch => colour(117, Ansi::Cyan),
        Class::Sync => colour(203, Ansi::Red),
        Class::CopyCall => colour(111, Ansi::LightBlue),
        Class::Api => colour(250, Ansi::White),
        Class::Osrt => colour(244, Ansi::DarkGray),
        Class::Overhead => colour(96, Ansi::Magenta),
        Class::OnCpu => colour(108, Ansi::Green),
        Class::Sample => colour(139, Ansi::Magenta),
    }
}

/// Glyph and colour of a part of a step's bar (the step budget panel): the glyph tells
/// the families apart without colour (busy, syncs, host, input pipeline, rest).
pub(crate) fn step_part(part: crate::view::steps::Part) -> (char, Colour) {
    use crate::analysis::Cause;
    use crate::view::steps::Part;
    match part {
        Part::Busy => ('█', GPU_BUSY),
        Part::Short => ('·', colour(240, Ansi::DarkGray)),
        Part::Idle(c) => match c {
            Cause::SyncWait => ('═', colour(203, Ansi::Red)),
            Cause::SyncDrain => ('═', colour(209, Ansi::LightRed)),
            Cause::PageableCopy => (glyph::PAGEABLE, colour(208, Ansi::LightRed)),
            Cause::HostWait => ('▒', colour(247, Ansi::Gray)),
            Cause::HostBusy => ('▒', colour(179, Ansi::Yellow)),
            Cause::LaunchBound => ('▒', colour(117, Ansi::Cyan)),
            Cause::CpuContention => ('▒', colour(227, Ansi::LightYellow)),
            Cause::WorkerBusy => ('░', colour(141, Ansi::Magenta)),
            Cause::IoWait => ('░', colour(75, Ansi::Blue)),
            Cause::Queued => ('∙', colour(250, Ansi::White)),
            Cause::Profiler => ('∙', colour(96, Ansi::Magenta)),
            Cause::Unknown => ('?', colour(244, Ansi::DarkGray)),
        },
    }
}
