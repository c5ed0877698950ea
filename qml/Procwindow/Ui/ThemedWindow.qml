pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls

// An ApplicationWindow in the window's theme: the Controls palette comes from
// Theme, so menus, dialogs, tooltips and scroll bars match the custom parts.
ApplicationWindow {
    color: Theme.window
    font.pixelSize: Theme.fontSize

    palette.window: Theme.raised
    palette.windowText: Theme.text
    palette.base: Theme.input
    palette.alternateBase: Theme.surface
    palette.text: Theme.text
    palette.button: Theme.raised
    palette.buttonText: Theme.text
    palette.brightText: Theme.textOnAccent
    palette.highlight: Theme.accent
    palette.highlightedText: Theme.textOnAccent
    palette.toolTipBase: "#3c3f45"
    palette.toolTipText: "#c9ccd3"
    palette.placeholderText: Theme.textFaint
    palette.light: "#4a4d54"
    palette.midlight: "#3c3f45"
    palette.mid: "#33363b"
    palette.dark: "#1a1b1e"
    palette.shadow: "#000000"
    palette.link: Theme.accent
    palette.disabled.text: Theme.textFaint
    palette.disabled.windowText: Theme.textFaint
    palette.disabled.buttonText: Theme.textFaint
}
