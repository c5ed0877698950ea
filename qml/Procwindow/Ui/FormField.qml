pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

// A text field that shows whether its value is at fault.
TextField {
    id: field
    property bool faulty
    Layout.fillWidth: true
    selectByMouse: true
    color: Theme.text
    placeholderTextColor: Theme.textFaint
    selectionColor: Theme.selection
    selectedTextColor: Theme.text
    leftPadding: 8
    rightPadding: 8
    background: Rectangle {
        implicitHeight: 30
        radius: Theme.radius
        color: Theme.input
        border.color: field.faulty ? Theme.danger : field.activeFocus ? Theme.focusRing : Theme.borderStrong
    }
}
