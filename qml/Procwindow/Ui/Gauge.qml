pragma ComponentBehavior: Bound

import QtQuick

// A small labelled meter: "CPU ▮▮▮▯▯ 12%". The text comes formatted from Python;
// the bar shows `value` clamped to 0…1. Compact, the bar goes ("CPU 12%").
Item {
    id: gauge

    property string label
    property string valueText
    property real value: 0
    property color barColor: Theme.accent
    property bool compact: false

    implicitWidth: row.implicitWidth
    implicitHeight: Theme.buttonSize
    opacity: enabled ? 1 : 0.45

    Row {
        id: row
        anchors.verticalCenter: parent.verticalCenter
        spacing: 6

        Text {
            anchors.verticalCenter: parent.verticalCenter
            text: gauge.label
            color: Theme.textFaint
            font.pixelSize: Theme.smallFontSize
            font.capitalization: Font.AllUppercase
            font.letterSpacing: 0.5
        }
        Rectangle {
            objectName: "gaugeBar"
            visible: !gauge.compact
            anchors.verticalCenter: parent.verticalCenter
            width: 44
            height: 6
            radius: 3
            color: Theme.input
            border.color: Theme.border
            Rectangle {
                width: Math.max(0, Math.min(1, gauge.value)) * (parent.width - 2)
                x: 1
                y: 1
                height: parent.height - 2
                radius: 2
                color: gauge.barColor
                Behavior on width {
                    NumberAnimation { duration: 250; easing.type: Easing.OutCubic }
                }
            }
        }
        Text {
            anchors.verticalCenter: parent.verticalCenter
            width: Math.max(implicitWidth, 40)
            text: gauge.valueText
            color: Theme.textDim
            font.family: Theme.monoFamily
            font.pixelSize: Theme.smallFontSize
        }
    }
}
