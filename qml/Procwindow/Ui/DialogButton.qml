pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls

// OK is the primary button (filled); disabled, either one is plainly greyed out.
Button {
    id: button
    property bool primary
    implicitHeight: Theme.buttonSize + 4
    leftPadding: 18
    rightPadding: 18
    hoverEnabled: true
    contentItem: Text {
        text: button.text
        font: button.font
        color: !button.enabled ? Theme.textFaint : button.primary ? Theme.textOnAccent : Theme.text
        horizontalAlignment: Text.AlignHCenter
        verticalAlignment: Text.AlignVCenter
    }
    background: Rectangle {
        implicitWidth: 84
        radius: Theme.radius
        color: !button.enabled ? Theme.surface
             : button.primary ? (button.down ? Qt.darker(Theme.accent, 1.25) : button.hovered ? Qt.lighter(Theme.accent, 1.12) : Theme.accent)
             : button.down ? Theme.pressed : button.hovered ? Theme.hover : Theme.raised
        border.color: button.visualFocus ? Theme.focusRing
                    : !button.enabled ? Theme.border
                    : button.primary ? Theme.accent : Theme.borderStrong
    }
}
