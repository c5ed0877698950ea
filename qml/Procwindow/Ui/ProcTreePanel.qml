pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Procwindow

// The processes one proc is made of, parents first: PID · State · CPU · Mem ·
// Threads · Command, each command indented under its parent. Term and Kill on a
// row reach that process alone; its right-click menu offers the other signals.
Rectangle {
    id: root

    required property ProcTreeModel treeModel
    required property ProcController controller
    property int procId: -1
    readonly property alias view: list

    // Emitted by the panel's close button.
    signal closeRequested()

    color: Theme.surface

    readonly property real pidWidth: 72
    readonly property real stateWidth: 92
    readonly property real cpuWidth: 64
    readonly property real memWidth: 80
    readonly property real threadsWidth: 56
    readonly property real actionsWidth: 2 * Theme.buttonSize + 4

    // A signal to one process of the tree; the tree is read again to show its effect.
    function send(osPid: int, name: string) { root.controller.sendSignal(root.procId, name, osPid); root.treeModel.reloadSoon() }

    ColumnLayout {
        anchors.fill: parent
        spacing: 0

        Rectangle {
            objectName: "treeHeader"
            Layout.fillWidth: true
            Layout.preferredHeight: 28
            color: Theme.header

            RowLayout {
                anchors.fill: parent
                anchors.leftMargin: Theme.spacing
                anchors.rightMargin: 2
                spacing: 0
                HeaderText { text: qsTr("PID"); Layout.preferredWidth: root.pidWidth; Layout.minimumWidth: root.pidWidth }
                HeaderText { text: qsTr("State"); Layout.preferredWidth: root.stateWidth; Layout.minimumWidth: root.stateWidth }
                HeaderText {
                    text: qsTr("CPU")
                    horizontalAlignment: Text.AlignRight
                    Layout.preferredWidth: root.cpuWidth
                    Layout.minimumWidth: root.cpuWidth
                }
                HeaderText {
                    text: qsTr("Mem")
                    horizontalAlignment: Text.AlignRight
                    Layout.preferredWidth: root.memWidth
                    Layout.minimumWidth: root.memWidth
                }
                HeaderText {
                    text: qsTr("Thr")
                    horizontalAlignment: Text.AlignRight
                    Layout.preferredWidth: root.threadsWidth
                    Layout.minimumWidth: root.threadsWidth
                }
                HeaderText {
                    text: qsTr("Command")
                    Layout.fillWidth: true
                    Layout.leftMargin: 2 * Theme.spacing
                    Layout.minimumWidth: 40
                }
                Text {
                    objectName: "treeSummary"
                    text: root.treeModel.summaryText
                    color: Theme.textDim
                    font.pixelSize: Theme.smallFontSize
                    elide: Text.ElideLeft
                    horizontalAlignment: Text.AlignRight
                    Layout.maximumWidth: Math.max(0, parent.width * 0.4)
                    Layout.rightMargin: Theme.spacing
                }
                IconButton {
                    objectName: "treeCloseButton"
                    iconName: "close"
                    tip: qsTr("Hide the processes")
                    shortcutText: "Ctrl+E"
                    implicitWidth: 22
                    implicitHeight: 22
                    onClicked: root.closeRequested()
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
            objectName: "treeList"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            model: root.treeModel
            boundsBehavior: Flickable.StopAtBounds
            ScrollBar.vertical: ScrollBar {}

            delegate: Rectangle {
                id: row
                required property int index
                required property int osPid
                required property int depth
                required property string stateText
                required property string command
                required property string cpuText
                required property string memText
                required property int threads
                required property bool leader
                required property bool stopped
                required property string toolTip

                objectName: "treeRow" + osPid
                width: ListView.view.width
                height: Theme.rowHeight
                color: hover.hovered ? Theme.hover : "transparent"

                HoverHandler { id: hover }
                TapHandler {
                    acceptedButtons: Qt.RightButton
                    onTapped: eventPoint => signalMenu.openFor(row.osPid, row, eventPoint.position.x, eventPoint.position.y)
                }
                ToolTip.visible: hover.hovered && !termButton.hovered && !killButton.hovered
                ToolTip.delay: 800
                ToolTip.text: row.toolTip

                RowLayout {
                    anchors.fill: parent
                    anchors.leftMargin: Theme.spacing
                    anchors.rightMargin: 2
                    spacing: 0

                    Text {
                        objectName: "treePid"
                        text: row.osPid
                        color: Theme.text
                        font.family: Theme.monoFamily
                        font.pixelSize: Theme.monoFontSize
                        Layout.preferredWidth: root.pidWidth
                        Layout.minimumWidth: root.pidWidth
                    }
                    Text {
                        text: row.stateText
                        color: row.stopped ? Theme.warning
                             : row.stateText === "zombie" ? Theme.danger
                             : row.stateText === "running" ? Theme.success
                             : Theme.textDim
                        font.pixelSize: Theme.fontSize
                        elide: Text.ElideRight
                        Layout.preferredWidth: root.stateWidth
                        Layout.minimumWidth: root.stateWidth
                    }
                    Text {
                        text: row.cpuText
                        color: Theme.text
                        font.pixelSize: Theme.fontSize
                        horizontalAlignment: Text.AlignRight
                        Layout.preferredWidth: root.cpuWidth
                        Layout.minimumWidth: root.cpuWidth
                    }
                    Text {
                        text: row.memText
                        color: Theme.text
                        font.pixelSize: Theme.fontSize
                        horizontalAlignment: Text.AlignRight
                        Layout.preferredWidth: root.memWidth
                        Layout.minimumWidth: root.memWidth
                    }
                    Text {
                        text: row.threads
                        color: Theme.textDim
                        font.pixelSize: Theme.fontSize
                        horizontalAlignment: Text.AlignRight
                        Layout.preferredWidth: root.threadsWidth
                        Layout.minimumWidth: root.threadsWidth
                    }
                    Text {
                        objectName: "treeCommand"
                        // Each generation one step in, under its parent.
                        text: (row.depth > 0 ? "└ " : "") + row.command
                        color: row.leader ? Theme.text : Theme.outputText
                        font.family: Theme.monoFamily
                        font.pixelSize: Theme.monoFontSize
                        font.weight: row.leader ? Font.DemiBold : Font.Normal
                        elide: Text.ElideRight
                        Layout.fillWidth: true
                        Layout.minimumWidth: 40
                        Layout.leftMargin: 2 * Theme.spacing + Math.min(row.depth, 8) * 14 - (row.depth > 0 ? 14 : 0)
                    }
                    Row {
                        Layout.preferredWidth: root.actionsWidth
                        Layout.minimumWidth: root.actionsWidth
                        spacing: 4
                        IconButton {
                            id: termButton
                            objectName: "treeTerm" + row.osPid
                            iconName: "term"
                            tip: qsTr("Terminate this process (SIGTERM)")
                            destructive: true
                            onClicked: root.send(row.osPid, "TERM")
                        }
                        IconButton {
                            id: killButton
                            objectName: "treeKill" + row.osPid
                            iconName: "kill"
                            tip: qsTr("Kill this process (SIGKILL)")
                            destructive: true
                            onClicked: root.send(row.osPid, "KILL")
                        }
                    }
                }
            }

            Text {
                objectName: "treeEmptyText"
                anchors.centerIn: parent
                width: parent.width - 2 * Theme.spacing
                horizontalAlignment: Text.AlignHCenter
                wrapMode: Text.WordWrap
                visible: list.count === 0
                text: root.treeModel.emptyText
                color: Theme.textFaint
                font.pixelSize: Theme.fontSize
            }
        }
    }

    // Every signal the panel offers, for the process right-clicked.
    Menu {
        id: signalMenu
        objectName: "treeMenu"
        property int osPid: -1
        function openFor(pid: int, at: Item, x: real, y: real) { signalMenu.osPid = pid; signalMenu.popup(at, x, y) }
        padding: 4
        background: Rectangle {
            implicitWidth: 220
            color: Theme.raised
            radius: 6
            border.color: Theme.borderStrong
        }
        Instantiator {
            model: root.treeModel.signalNames
            delegate: MenuEntry {
                required property string modelData
                objectName: "treeMenuItem-" + modelData
                text: qsTr("Send SIG%1 to %2").arg(modelData).arg(signalMenu.osPid)
                onTriggered: root.send(signalMenu.osPid, modelData)
            }
            onObjectAdded: (index, object) => signalMenu.insertItem(index, object as MenuItem)
            onObjectRemoved: (index, object) => signalMenu.removeItem(object as MenuItem)
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
