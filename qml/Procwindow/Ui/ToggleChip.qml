pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls

// A small checkable text button inside a field (".*" regex, "Aa" match case).
AbstractButton {
    id: chip

    property string label
    property string tip
    readonly property string toolTipText: tip

    checkable: true
    focusPolicy: Qt.NoFocus
    hoverEnabled: true
    implicitWidth: 24
    implicitHeight: 20
    text: tip
    Accessible.name: tip

    ToolTip.visible: hovered
    ToolTip.delay: 600
    ToolTip.text: tip

    contentItem: Text {
        text: chip.label
        horizontalAlignment: Text.AlignHCenter
        verticalAlignment: Text.AlignVCenter
        color: chip.checked ? Theme.textOnAccent : chip.hovered ? Theme.text : Theme.textDim
        font.family: Theme.monoFamily
        font.pixelSize: Theme.smallFontSize
        font.weight: Font.DemiBold
    }
    background: Rectangle {
        radius: 3
        color: chip.checked ? Theme.accent : chip.hovered ? Theme.hover : "transparent"
    }
}
