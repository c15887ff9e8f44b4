//! The styles output is drawn in, and drawing text in one.

use anstyle::{AnsiColor, Style};

pub const GOOD: Style = AnsiColor::Green.on_default();
pub const WARN: Style = AnsiColor::Yellow.on_default();
pub const BAD: Style = AnsiColor::Red.on_default().bold();
pub const DIM: Style = Style::new().dimmed();
pub const BOLD: Style = Style::new().bold();

/// `text` drawn in `style` when `enabled`, else as it is.
pub fn paint(enabled: bool, style: Style, text: &str) -> String {
    if enabled {
        format!("{}{text}{}", style.render(), style.render_reset())
    } else {
        text.to_string()
    }
}
