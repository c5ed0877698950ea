pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import Procwindow

// The output filter: a text field with regex and case toggles and a match count.
// It shows and writes the OutputModel's filter properties; the model does the filtering.
// Enter and Shift+Enter ask for the next and the previous match; the page moves there.
TextField {
    id: field

    required property OutputModel outputModel
    // "8 matches", "invalid": the page's view-model says.
    property string matchText
    property string shortcutText: "Ctrl+F"
    readonly property bool invalid: outputModel.filterError.length > 0
    readonly property string toolTipText: qsTr("Filter lines") + "  ·  " + shortcutText + qsTr(", Esc clears")
                                          + qsTr("; Enter / Shift+Enter: next / previous match")
    // Over a toggle, its own tooltip shows (the attached ToolTip is one shared popup).
    readonly property bool toggleHovered: regexToggle.hovered || caseToggle.hovered

    implicitHeight: Theme.buttonSize
    leftPadding: 26
    // The text scrolls, clipped, in the space left of the count and the toggles.
    rightPadding: toggles.width + 6
    clip: true
    verticalAlignment: TextInput.AlignVCenter
    placeholderText: qsTr("Filter")
    placeholderTextColor: Theme.textFaint
    color: Theme.text
    selectionColor: Theme.accentSoft
    selectedTextColor: Theme.text
    font.pixelSize: Theme.fontSize
    selectByMouse: true
    hoverEnabled: true

    signal nextRequested()
    signal previousRequested()

    // Two-way: typing sets the model's filter, and a filter cleared elsewhere (Esc) empties the field.
    text: outputModel.filterText
    onTextEdited: outputModel.filterText = text

    // Enter is the window's "stream" shortcut elsewhere; here it goes from match to match.
    Keys.onShortcutOverride: event => event.accepted = event.key === Qt.Key_Return || event.key === Qt.Key_Enter
    Keys.onReturnPressed: event => field.moveTo(event)
    Keys.onEnterPressed: event => field.moveTo(event)
    function moveTo(event: KeyEvent) { (event.modifiers & Qt.ShiftModifier) ? field.previousRequested() : field.nextRequested() }

    ToolTip.visible: hovered && !activeFocus && !toggleHovered || (invalid && activeFocus)
    ToolTip.delay: invalid ? 0 : 600
    ToolTip.text: invalid ? outputModel.filterError : toolTipText

    background: Rectangle {
        radius: Theme.radius
        color: Theme.input
        border.width: 1
        border.color: field.invalid ? Theme.danger
                    : field.activeFocus ? Theme.focusRing
                    : field.hovered ? Theme.borderStrong
                    : Theme.border

        Image {
            x: 7
            anchors.verticalCenter: parent.verticalCenter
            width: 14
            height: 14
            sourceSize.width: 28
            sourceSize.height: 28
            source: Theme.icon("filter")
            opacity: 0.55
        }
    }

    Row {
        id: toggles
        anchors.right: parent.right
        anchors.rightMargin: 3
        anchors.verticalCenter: parent.verticalCenter
        spacing: 2

        // A rule between the text and its count: the two never read as one.
        Rectangle {
            anchors.verticalCenter: parent.verticalCenter
            visible: matchCount.visible
            width: 1
            height: 14
            color: Theme.borderStrong
        }
        Text {
            id: matchCount
            objectName: "matchCountText"
            anchors.verticalCenter: parent.verticalCenter
            visible: field.text.length > 0
            leftPadding: 4
            rightPadding: 4
            text: field.matchText
            color: field.invalid ? Theme.danger : field.outputModel.matchCount > 0 ? Theme.textDim : Theme.warning
            font.pixelSize: Theme.smallFontSize
        }
        ToggleChip {
            id: regexToggle
            objectName: "regexToggle"
            label: ".*"
            tip: qsTr("Regular expression (Python re syntax)")
            checked: field.outputModel.filterRegex
            onToggled: field.outputModel.filterRegex = checked
        }
        ToggleChip {
            id: caseToggle
            objectName: "caseToggle"
            label: "Aa"
            tip: qsTr("Match case")
            checked: field.outputModel.caseSensitive
            onToggled: field.outputModel.caseSensitive = checked
        }
    }
}
