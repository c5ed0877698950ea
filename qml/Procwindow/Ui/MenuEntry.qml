pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

// A menu item that shows its keyboard shortcut on the right; with checkBox, a box
// on the left, ticked while checked.
MenuItem {
    id: entry

    property string shortcutText
    property string iconName
    property bool checkBox: false

    implicitHeight: 28
    leftPadding: 10
    rightPadding: 14

    icon.source: iconName.length > 0 ? Theme.icon(iconName) : ""
    icon.width: 16
    icon.height: 16
    icon.color: enabled ? Theme.textDim : Theme.textFaint

    // The box is drawn in the row below, in the theme's colours.
    indicator: null
    Accessible.checkable: checkBox
    Accessible.checked: checkBox && checked
    contentItem: RowLayout {
        spacing: 10
        // The box (the style's own indicator is not drawn: see below).
        Rectangle {
            visible: entry.checkBox
            Layout.preferredWidth: 14
            Layout.preferredHeight: 14
            Layout.leftMargin: 1
            radius: 3
            color: Theme.input
            border.color: entry.highlighted ? Theme.textOnAccent : Theme.borderStrong
            opacity: entry.enabled ? 1.0 : 0.5
            Text {
                anchors.centerIn: parent
                text: entry.checked ? "✓" : ""
                color: entry.enabled ? Theme.accent : Theme.textFaint
                font.pixelSize: Theme.fontSize - 1
                font.weight: Font.DemiBold
            }
        }
        Image {
            Layout.preferredWidth: 16
            Layout.preferredHeight: 16
            source: entry.icon.source
            sourceSize.width: 32
            sourceSize.height: 32
            opacity: entry.enabled ? 0.75 : 0.35
            visible: entry.iconName.length > 0
        }
        Text {
            Layout.fillWidth: true
            text: entry.text
            color: entry.enabled ? (entry.highlighted ? Theme.textOnAccent : Theme.text) : Theme.textFaint
            font.pixelSize: Theme.fontSize
            elide: Text.ElideRight
        }
        Text {
            visible: entry.shortcutText.length > 0
            text: entry.shortcutText
            color: entry.highlighted ? Theme.textOnAccent : Theme.textFaint
            font.pixelSize: Theme.smallFontSize + 1
        }
    }
    background: Rectangle {
        implicitWidth: 220
        radius: 3
        color: entry.highlighted ? Theme.accent : "transparent"
    }
}
