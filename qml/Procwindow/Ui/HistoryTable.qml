pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Procwindow

// Every recorded run of a scope, newest first: Status · Command · Started ·
// Runtime · Lines. Runs this window's supervisor no longer holds (earlier runs,
// other supervisors', dismissed ones) are greyed. A click shows a run's output.
Rectangle {
    id: root

    required property HistoryModel historyModel
    property int currentProcId: -1
    property int streamingProcId: -1
    readonly property alias view: list

    signal selected(int procId)

    color: Theme.surface

    // Column widths: the command takes what the others leave.
    readonly property real statusWidth: 190
    readonly property real whenWidth: 118
    readonly property real runtimeWidth: 76
    readonly property real linesWidth: 76

    ColumnLayout {
        anchors.fill: parent
        spacing: 0

        Rectangle {
            objectName: "historyHeader"
            Layout.fillWidth: true
            Layout.preferredHeight: 28
            color: Theme.header

            RowLayout {
                anchors.fill: parent
                anchors.leftMargin: Theme.spacing
                anchors.rightMargin: Theme.spacing
                spacing: 0
                HeaderText { text: qsTr("Status"); Layout.preferredWidth: root.statusWidth; Layout.minimumWidth: root.statusWidth }
                HeaderText { text: qsTr("Command"); Layout.fillWidth: true; Layout.preferredWidth: 80 }
                HeaderText { text: qsTr("Started"); Layout.preferredWidth: root.whenWidth; Layout.minimumWidth: root.whenWidth }
                HeaderText { text: qsTr("Runtime"); Layout.preferredWidth: root.runtimeWidth; Layout.minimumWidth: root.runtimeWidth }
                HeaderText {
                    text: qsTr("Lines")
                    horizontalAlignment: Text.AlignRight
                    Layout.preferredWidth: root.linesWidth
                    Layout.minimumWidth: root.linesWidth
                }
            }
            Rectangle {
                anchors.bottom: parent.bottom
                width: parent.width
                height: 1
                color: Theme.border
            }
        }

        ListView {
            id: list
            objectName: "historyList"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            model: root.historyModel
            boundsBehavior: Flickable.StopAtBounds
            ScrollBar.vertical: ScrollBar {}

            delegate: Rectangle {
                id: row
                required property int index
                required property int procId
                required property string command
                required property string statusText
                required property color statusColor
                required property string whenText
                required property string runtimeText
                required property string linesText
                required property string toolTip
                required property bool live

                readonly property bool current: procId === root.currentProcId
                readonly property color textColor: live ? Theme.text : Theme.textDim

                objectName: "historyRow" + procId
                width: ListView.view.width
                height: Theme.rowHeight
                color: current ? Theme.selection : hover.hovered ? Theme.hover : "transparent"

                HoverHandler { id: hover }
                TapHandler { onTapped: root.selected(row.procId) }
                ToolTip.visible: hover.hovered
                ToolTip.delay: 800
                ToolTip.text: row.toolTip

                RowLayout {
                    anchors.fill: parent
                    anchors.leftMargin: Theme.spacing
                    anchors.rightMargin: Theme.spacing
                    spacing: 0

                    RowLayout {
                        Layout.preferredWidth: root.statusWidth
                        Layout.minimumWidth: root.statusWidth
                        Layout.maximumWidth: root.statusWidth
                        spacing: 6
                        Rectangle {
                            Layout.preferredWidth: 8
                            Layout.preferredHeight: 8
                            radius: 4
                            color: row.statusColor
                            opacity: row.live ? 1.0 : 0.6
                        }
                        Text {
                            text: row.statusText
                            color: row.textColor
                            font.pixelSize: Theme.fontSize
                            elide: Text.ElideRight
                            Layout.fillWidth: true
                        }
                    }
                    Text {
                        text: row.command
                        color: row.textColor
                        font.family: Theme.monoFamily
                        font.pixelSize: Theme.monoFontSize
                        font.weight: row.procId === root.streamingProcId ? Font.DemiBold : Font.Normal
                        elide: Text.ElideMiddle
                        // What the other columns leave, never more: a long command elides.
                        Layout.fillWidth: true
                        Layout.preferredWidth: 80
                        Layout.minimumWidth: 40
                        Layout.rightMargin: Theme.spacing
                    }
                    Text {
                        text: row.whenText
                        color: row.textColor
                        font.pixelSize: Theme.fontSize
                        elide: Text.ElideRight
                        Layout.preferredWidth: root.whenWidth
                        Layout.minimumWidth: root.whenWidth
                    }
                    Text {
                        text: row.runtimeText
                        color: row.textColor
                        font.pixelSize: Theme.fontSize
                        Layout.preferredWidth: root.runtimeWidth
                        Layout.minimumWidth: root.runtimeWidth
                    }
                    Text {
                        text: row.linesText
                        color: Theme.textDim
                        font.pixelSize: Theme.fontSize
                        horizontalAlignment: Text.AlignRight
                        Layout.preferredWidth: root.linesWidth
                        Layout.minimumWidth: root.linesWidth
                    }
                }
            }

            Text {
                objectName: "historyEmptyText"
                anchors.centerIn: parent
                visible: list.count === 0
                text: root.historyModel.emptyText
                color: Theme.textFaint
                font.pixelSize: Theme.fontSize
            }
        }
    }

    component HeaderText: Text {
        color: Theme.textDim
        font.pixelSize: Theme.smallFontSize
        font.weight: Font.DemiBold
        font.capitalization: Font.AllUppercase
        elide: Text.ElideRight
        verticalAlignment: Text.AlignVCenter
        Layout.fillHeight: true
    }
}
