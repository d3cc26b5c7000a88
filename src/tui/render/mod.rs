//! Drawing: pure functions of the [`App`] state, one file per region; each panel
//! draws itself (`panels/`).
//!
//! ```text
//! ┌ header: lanescope · trace · nsys version · view start + width ─────────────┐
//! │ ruler label │ ▏1.2   ▏1.4   ▼      ▏1.6   ▏1.8        (ticks follow zoom)   │
//! │ * pinned    │ ███▓▒░                                                        │
//! │ ▾ GPU 0     │ ███▓░××××××██▄▄  (overview: busy / copy-only / gap)  ┌panel──┐ │
//! │   PCIe RX % │ ▁▁▇█▇▁  ▁▇█▇   (GPU metrics: mean per cell, eighths) │       │ │
//! │   kernels s7│ ██[name]███░  ░                                      │details│ │
//! │   H2D s7    │     ▚▚                                               │phases │ │
//! │ ▾ python3   │ ▒▒▒▓▓███                                             │gaps   │ │
//! │   NVTX 0    │ [step 3            ][step 4 ...                      └───────┘ │
//! │ status: cursor, mark→cursor, gaps ≥ threshold, selection                    │
//! └ keys that matter now ───────────────────────────────────────────────────────┘
//! ```
//! Panels go right on wide terminals and below the lanes on narrow ones; help
//! overlays everything.

mod findings;
mod header;
pub(crate) mod lanes;
mod metrics;
pub(crate) mod ruler;
pub(crate) mod status;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::app::App;
use super::layout::{Areas, MIN_SIZE};
use super::panels::help;

/// Draw the whole screen for `app`.
pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    let areas = Areas::new(area, app.panel_shape(), !app.analysis.findings.is_empty());
    if areas.too_small || (area.width, area.height) != app.size {
        too_small(frame, area, areas.too_small);
        return;
    }
    header::render(frame, app, areas.header);
    ruler::render(frame, app, &areas);
    let free = lanes::render(frame, app, &areas);
    // The kept rows, and the lanes' rows left empty (a blank row above the box when
    // there is room for it).
    let bottom = areas.findings.y + areas.findings.height;
    let spare = bottom.saturating_sub(free);
    if spare >= findings::MIN_ROWS {
        let top = if spare > findings::MIN_ROWS + 1 { free + 1 } else { free };
        findings::render(frame, app, Rect::new(areas.lanes.x, top, areas.lanes.width, bottom - top));
    }
    if let (Some(r), Some(p)) = (areas.panel, &app.panel) {
        p.render(frame, &app.panel_context(), r);
    }
    status::render(frame, app, areas.status);
    if let Some(h) = app.help {
        help::render(frame, &app.panel_context(), h, areas.help);
    }
}

/// Say the terminal is too small (or being resized).
pub(crate) fn too_small(frame: &mut Frame, area: Rect, too_small: bool) {
    let msg = if too_small {
        format!(
            "Terminal too small: {}x{}. lanescope needs at least {}x{}. Enlarge it, or q to quit.",
            area.width, area.height, MIN_SIZE.0, MIN_SIZE.1
        )
    } else {
        "Resizing…".to_string()
    };
    let para = ratatui::widgets::Paragraph::new(msg).wrap(ratatui::widgets::Wrap { trim: true });
    let y = area.height / 2;
    frame.render_widget(para, Rect::new(area.x, area.y + y.saturating_sub(1), area.width, area.height - y + 1));
}
