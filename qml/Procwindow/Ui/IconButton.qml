pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls

// A flat icon button. Its tooltip names the action and, when it has one, the
// keyboard shortcut that does the same thing.
ToolButton {
    id: control

    // resources/icons/<iconName>.svg
    property string iconName
    property string tip
    property string shortcutText
    property color iconColor: Theme.textDim
    property color activeColor: Theme.text
    // Hovering a destructive action tints it.
    property bool destructive: false
    // What the tooltip says (read by tests and assistive technology).
    readonly property string toolTipText: shortcutText.length > 0 ? tip + "  ·  " + shortcutText : tip

    implicitWidth: Theme.buttonSize
    implicitHeight: Theme.buttonSize
    padding: 0
    display: AbstractButton.IconOnly
    focusPolicy: Qt.NoFocus
    hoverEnabled: true
    text: tip
    // Disabled, it fades: an action that does not apply here does not look clickable.
    opacity: enabled ? 1.0 : 0.35

    icon.source: iconName.length > 0 ? Theme.icon(iconName) : ""
    icon.width: Theme.iconSize
    icon.height: Theme.iconSize
    icon.color: !enabled ? Theme.textFaint
              : checked ? Theme.accent
              : destructive && hovered ? Theme.danger
              : hovered ? activeColor
              : iconColor

    Accessible.name: tip
    Accessible.description: toolTipText

    ToolTip.visible: hovered && tip.length > 0
    ToolTip.delay: 600
    ToolTip.text: toolTipText

    background: Rectangle {
        radius: Theme.radius
        color: control.down ? Theme.pressed
             : control.checked ? Theme.accentSoft
             : control.hovered && control.enabled ? Theme.hover
             : "transparent"
    }
}
