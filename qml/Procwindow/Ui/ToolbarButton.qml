pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls

// A flat toolbar button with an icon and a label; its tooltip names the shortcut.
// Checkable, it shows its checked state with the accent.
ToolButton {
    id: control

    property string iconName
    property string tip
    property string shortcutText
    readonly property string toolTipText: shortcutText.length > 0 ? tip + "  ·  " + shortcutText : tip

    implicitHeight: Theme.buttonSize + 4
    leftPadding: 8
    rightPadding: 10
    spacing: 6
    focusPolicy: Qt.NoFocus
    hoverEnabled: true
    display: AbstractButton.TextBesideIcon
    font.pixelSize: Theme.fontSize

    icon.source: iconName.length > 0 ? Theme.icon(iconName) : ""
    icon.width: Theme.iconSize
    icon.height: Theme.iconSize
    icon.color: enabled ? (hovered ? Theme.text : Theme.textDim) : Theme.textFaint
    palette.buttonText: enabled ? Theme.text : Theme.textFaint

    Accessible.description: toolTipText
    ToolTip.visible: hovered && tip.length > 0
    ToolTip.delay: 600
    ToolTip.text: toolTipText

    background: Rectangle {
        radius: Theme.radius
        color: control.checked ? Theme.accentSoft : control.down ? Theme.pressed
             : control.hovered && control.enabled ? Theme.hover : "transparent"
    }
}
