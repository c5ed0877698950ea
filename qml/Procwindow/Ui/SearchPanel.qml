pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Procwindow

// The search across the output of every run, live and past, of every supervisor
// the window shows: a field, then the matching lines grouped by run (newest run
// first), each run's heading naming its supervisor when there are several. A
// click (or Enter) on a line opens its run, on its supervisor, at that line.
Rectangle {
    id: root

    required property SearchModel searchModel
    // What the empty field says (that every supervisor is searched, when the window
    // shows several).
    property string placeholder

    // ``host``: the key of the hit's supervisor.
    signal openLine(string host, int procId, int seq)
    signal closeRequested()

    function focusField() { field.forceActiveFocus(); field.selectAll() }
    function search() { root.searchModel.search(field.text) }
    function openAt(row: int) { root.openLine(root.searchModel.hostAt(row), root.searchModel.procIdAt(row), root.searchModel.seqAt(row)) }

    color: Theme.window

    ColumnLayout {
        anchors.fill: parent
        spacing: 0

        Rectangle {
            Layout.fillWidth: true
            Layout.preferredHeight: 64
            color: Theme.window

            ColumnLayout {
                anchors.fill: parent
                anchors.leftMargin: Theme.spacing * 2
                anchors.rightMargin: Theme.spacing
                anchors.topMargin: 6
                anchors.bottomMargin: 4
                spacing: 2

                RowLayout {
                    Layout.fillWidth: true
                    spacing: Theme.spacing

                    TextField {
                        id: field
                        objectName: "searchField"
                        Layout.fillWidth: true
                        placeholderText: root.placeholder
                        placeholderTextColor: Theme.textFaint
                        color: Theme.text
                        font.pixelSize: Theme.fontSize
                        rightPadding: chips.width + 8
                        selectByMouse: true
                        background: Rectangle {
                            radius: Theme.radius
                            color: Theme.input
                            border.color: root.searchModel.statusError ? Theme.danger
                                        : field.activeFocus ? Theme.focusRing : Theme.border
                        }
                        onAccepted: root.search()
                        Keys.onEscapePressed: root.closeRequested()
                        Keys.onDownPressed: { list.forceActiveFocus(); if (list.currentIndex < 0) list.currentIndex = 0 }

                        Row {
                            id: chips
                            anchors.right: parent.right
                            anchors.rightMargin: 4
                            anchors.verticalCenter: parent.verticalCenter
                            spacing: 2
                            ToggleChip {
                                objectName: "searchRegexChip"
                                label: ".*"
                                tip: qsTr("Regular expression (Python syntax)")
                                checked: root.searchModel.regex
                                onToggled: { root.searchModel.regex = checked; if (field.text.length > 0) root.search() }
                            }
                            ToggleChip {
                                objectName: "searchCaseChip"
                                label: "Aa"
                                tip: qsTr("Match case")
                                checked: root.searchModel.caseSensitive
                                onToggled: { root.searchModel.caseSensitive = checked; if (field.text.length > 0) root.search() }
                            }
                        }
                    }
                    ToolbarButton {
                        objectName: "searchStopButton"
                        visible: root.searchModel.running
                        text: qsTr("Stop")
                        tip: qsTr("Stop searching; the matches found stay")
                        onClicked: root.searchModel.cancel()
                    }
                    IconButton {
                        objectName: "searchCloseButton"
                        iconName: "close"
                        tip: qsTr("Close the search · Esc")
                        onClicked: root.closeRequested()
                    }
                }
                Text {
                    objectName: "searchStatusText"
                    Layout.fillWidth: true
                    text: root.searchModel.summaryText
                    color: root.searchModel.statusError ? Theme.danger : Theme.textFaint
                    font.pixelSize: Theme.smallFontSize + 1
                    elide: Text.ElideRight
                }
            }
        }
        Rectangle {
            Layout.fillWidth: true
            Layout.preferredHeight: 1
            color: Theme.border
        }

        ListView {
            id: list
            objectName: "searchResults"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            model: root.searchModel
            currentIndex: -1
            boundsBehavior: Flickable.StopAtBounds
            keyNavigationEnabled: true
            ScrollBar.vertical: ScrollBar {}

            Keys.onReturnPressed: root.openAt(list.currentIndex)
            Keys.onEnterPressed: root.openAt(list.currentIndex)
            Keys.onEscapePressed: root.closeRequested()

            delegate: Column {
                id: hit
                required property int index
                required property int procId
                required property int seq
                required property string runTitle
                required property string scopeText
                required property string toolTip
                required property string text
                required property string timeText
                required property bool isStderr
                required property bool firstOfProc
                required property string host
                required property string hostLabel

                objectName: "searchHit" + index
                width: ListView.view.width

                // A click on the line, or on its run's heading, opens the run there.
                TapHandler {
                    onTapped: { list.currentIndex = hit.index; root.openLine(hit.host, hit.procId, hit.seq) }
                }

                // The run the lines below belong to.
                Rectangle {
                    visible: hit.firstOfProc
                    width: parent.width
                    height: visible ? 26 : 0
                    color: Theme.surface
                    RowLayout {
                        anchors.fill: parent
                        anchors.leftMargin: Theme.spacing * 2
                        anchors.rightMargin: Theme.spacing
                        spacing: Theme.spacing
                        Text {
                            text: hit.runTitle
                            color: Theme.text
                            font.family: Theme.monoFamily
                            font.pixelSize: Theme.monoFontSize
                            font.weight: Font.DemiBold
                            elide: Text.ElideMiddle
                            Layout.fillWidth: true
                        }
                        // Its supervisor, when the search covers several.
                        Rectangle {
                            objectName: "searchHitHost" + hit.index
                            visible: hit.hostLabel !== ""
                            property alias text: hostText.text
                            Layout.preferredWidth: hostText.implicitWidth + 12
                            Layout.maximumWidth: 220
                            Layout.preferredHeight: 18
                            radius: Theme.radius
                            color: Theme.input
                            border.color: Theme.border
                            Text {
                                id: hostText
                                anchors.fill: parent
                                anchors.leftMargin: 6
                                anchors.rightMargin: 6
                                verticalAlignment: Text.AlignVCenter
                                text: hit.hostLabel
                                color: Theme.text
                                font.pixelSize: Theme.smallFontSize
                                elide: Text.ElideRight
                            }
                        }
                        Text {
                            text: hit.scopeText
                            color: Theme.textFaint
                            font.pixelSize: Theme.smallFontSize
                        }
                    }
                }
                Rectangle {
                    width: parent.width
                    height: Theme.lineHeight + 4
                    color: hit.ListView.isCurrentItem ? Theme.selection : lineHover.hovered ? Theme.hover : "transparent"

                    HoverHandler { id: lineHover; cursorShape: Qt.PointingHandCursor }
                    ToolTip.visible: lineHover.hovered
                    ToolTip.delay: 800
                    ToolTip.text: hit.toolTip

                    Row {
                        anchors.fill: parent
                        anchors.leftMargin: Theme.spacing * 2
                        spacing: Theme.spacing
                        Text {
                            width: 64
                            anchors.verticalCenter: parent.verticalCenter
                            text: hit.timeText
                            color: Theme.lineNumber
                            font.family: Theme.monoFamily
                            font.pixelSize: Theme.monoFontSize
                        }
                        Text {
                            width: 56
                            anchors.verticalCenter: parent.verticalCenter
                            text: hit.seq
                            horizontalAlignment: Text.AlignRight
                            color: Theme.lineNumber
                            font.family: Theme.monoFamily
                            font.pixelSize: Theme.monoFontSize
                        }
                        Text {
                            width: parent.width - 64 - 56 - 3 * Theme.spacing
                            anchors.verticalCenter: parent.verticalCenter
                            text: hit.text
                            textFormat: Text.PlainText
                            color: hit.isStderr ? Theme.stderrText : Theme.outputText
                            font.family: Theme.monoFamily
                            font.pixelSize: Theme.monoFontSize
                            elide: Text.ElideRight
                        }
                    }
                }
            }
        }
    }
}
