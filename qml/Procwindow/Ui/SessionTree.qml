pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import Procwindow

// Sessions and their agents; when the window shows several supervisors, each is
// a node of its own (kind "host") above its sessions. The current node is the
// active scope: `selection` (a ScopeSelection) keeps the two together. The tree
// only emits what the person did; the window owns the menu.
FocusScope {
    id: tree

    required property HostTreeModel sessionModel
    required property ScopeSelection selection
    readonly property alias view: treeView

    // A right-click (or the menu key) on a node, at a position in `tree`.
    signal contextMenuRequested(string session, string agent, point position)
    // A double-click on a node.
    signal activated(string session, string agent)
    // The menu key: the current node answers with contextMenuRequested.
    signal menuRequested()

    Rectangle {
        anchors.fill: parent
        color: Theme.surface
    }

    TreeView {
        id: treeView
        objectName: "sessionTree"
        anchors.fill: parent
        anchors.topMargin: 4
        clip: true
        focus: true
        model: tree.sessionModel
        boundsBehavior: Flickable.StopAtBounds
        acceptedButtons: Qt.NoButton
        selectionModel: tree.selection
        columnWidthProvider: () => treeView.width
        ScrollBar.vertical: ScrollBar { policy: ScrollBar.AsNeeded }

        // Sessions start expanded.
        Connections {
            target: tree.sessionModel
            function onRowsInserted() { Qt.callLater(treeView.expandRecursively) }
            function onModelReset() { Qt.callLater(treeView.expandRecursively) }
        }
        Component.onCompleted: expandRecursively()

        delegate: Item {
            id: node

            required property TreeView treeView
            required property bool isTreeNode
            required property bool expanded
            required property bool hasChildren
            required property int depth
            required property int row
            required property int column
            required property bool current
            required property string name
            required property string kind
            required property string session
            required property string agent
            required property int running
            required property int total
            required property string host
            required property bool connected
            // "2/5" (running of all), "disconnected", or "" with no process.
            required property string countText

            readonly property bool isHost: kind === "host"
            readonly property bool isSession: kind === "session"
            // Several hosts may each have a session "web": names say whose.
            readonly property string owner: tree.sessionModel.showsHosts ? host + "/" : ""

            objectName: isHost ? "hostNode-" + host
                      : isSession ? "sessionNode-" + owner + session
                      : "agentNode-" + owner + session + "-" + agent
            implicitWidth: treeView.width
            implicitHeight: isHost ? 32 : isSession ? 30 : 28
            // A supervisor out of reach: its nodes are greyed until it is back.
            opacity: connected ? 1.0 : 0.55

            // A click makes the node current (and so the active scope).
            function makeCurrent() { tree.forceActiveFocus(); tree.selection.setCurrentIndex(node.treeView.index(node.row, node.column), ItemSelectionModel.ClearAndSelect) }

            Connections {
                target: tree
                enabled: node.current && node.visible
                function onMenuRequested() { tree.contextMenuRequested(node.session, node.agent, node.mapToItem(tree, 32, node.height)) }
            }

            Rectangle {
                anchors.fill: parent
                anchors.leftMargin: 4
                anchors.rightMargin: 4
                radius: Theme.radius
                color: node.current ? (tree.activeFocus ? Theme.selection : Theme.selectionInactive)
                     : hover.hovered ? Theme.hover
                     : "transparent"
            }

            HoverHandler { id: hover }
            TapHandler {
                acceptedButtons: Qt.LeftButton
                onTapped: node.makeCurrent()
                onDoubleTapped: tree.activated(node.session, node.agent)
            }
            TapHandler {
                acceptedButtons: Qt.RightButton
                onTapped: (eventPoint, button) => { node.makeCurrent(); tree.contextMenuRequested(node.session, node.agent, node.mapToItem(tree, eventPoint.position)) }
            }

            Row {
                anchors.verticalCenter: parent.verticalCenter
                x: 10 + node.depth * 18
                spacing: 6

                // Expand/collapse chevron.
                Text {
                    width: 12
                    anchors.verticalCenter: parent.verticalCenter
                    text: node.hasChildren ? (node.expanded ? "▾" : "▸") : ""
                    color: Theme.textFaint
                    font.pixelSize: Theme.fontSize
                    TapHandler {
                        onTapped: node.treeView.toggleExpanded(node.row)
                    }
                }
                // Running indicator: green while something runs in this scope; a
                // host's: a square, red while its link is down.
                Rectangle {
                    anchors.verticalCenter: parent.verticalCenter
                    width: 7
                    height: 7
                    radius: node.isHost ? 1.5 : 3.5
                    color: !node.connected ? Theme.danger
                         : node.running > 0 ? Theme.success : "transparent"
                    border.width: node.running > 0 || !node.connected ? 0 : 1
                    border.color: Theme.textFaint
                }
                Text {
                    id: nameText
                    anchors.verticalCenter: parent.verticalCenter
                    // Elided before it reaches the counts on the right.
                    width: Math.min(implicitWidth, node.width - 10 - node.depth * 18 - x - (countText.visible ? countText.width : 0) - 24)
                    text: node.name
                    elide: Text.ElideRight
                    color: Theme.text
                    font.pixelSize: node.isHost ? Theme.fontSize + 1 : Theme.fontSize
                    font.weight: node.isHost || node.isSession ? Font.DemiBold : Font.Normal
                }
            }
            Text {
                id: countText
                objectName: node.isHost ? "hostState-" + node.host : ""
                anchors.right: parent.right
                anchors.rightMargin: 14
                anchors.verticalCenter: parent.verticalCenter
                visible: text.length > 0
                text: node.countText
                color: node.running > 0 ? Theme.textDim : Theme.textFaint
                font.family: Theme.monoFamily
                font.pixelSize: Theme.smallFontSize
            }
        }
    }
}
