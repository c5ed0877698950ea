pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls

// Sessions and their agents. Selecting a node makes it the active scope; the
// tree only emits what the person did, the window owns the menu.
FocusScope {
    id: tree

    required property var sessionModel
    readonly property alias view: treeView
    readonly property bool hasCurrent: treeView.selectionModel.currentIndex.valid
    // The scope of the current node, reported by its delegate.
    property string currentSession
    property string currentAgent

    // (session, agent) of the node that became current; agent is "" for a session.
    signal scopeSelected(string session, string agent)
    // A right-click (or the menu key) on a node, at a position in `tree`.
    signal contextMenuRequested(string session, string agent, point position)
    // A double-click on a node.
    signal activated(string session, string agent)

    function reportCurrent(session: string, agent: string) {
        if (session === currentSession && agent === currentAgent)
            return
        currentSession = session
        currentAgent = agent
        scopeSelected(session, agent)
    }
    function selectScope(session: string, agent: string) {
        const index = sessionModel.indexFor(session, agent)
        if (!index.valid)
            return
        if (agent.length > 0)
            treeView.expandToIndex(index)
        treeView.selectionModel.setCurrentIndex(index, ItemSelectionModel.ClearAndSelect)
        const row = treeView.rowAtIndex(index)
        if (row >= 0)
            treeView.positionViewAtRow(row, TableView.Contain)
    }
    // Where a context menu for the current node goes (keyboard: Menu, Shift+F10).
    function currentNodePosition(): point {
        const row = treeView.rowAtIndex(treeView.selectionModel.currentIndex)
        const item = treeView.itemAtCell(Qt.point(0, row))
        if (!item)
            return Qt.point(Theme.spacing * 3, Theme.spacing * 3)
        return item.mapToItem(tree, 32, item.height)
    }

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
        selectionModel: ItemSelectionModel {}
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

            readonly property bool isSession: kind === "session"

            objectName: isSession ? "sessionNode-" + session : "agentNode-" + session + "-" + agent
            implicitWidth: treeView.width
            implicitHeight: isSession ? 30 : 28

            // The current node tells the tree its scope (mouse and keyboard alike).
            onCurrentChanged: if (current) tree.reportCurrent(session, agent)
            Component.onCompleted: if (current) tree.reportCurrent(session, agent)

            function makeCurrent() {
                node.treeView.selectionModel.setCurrentIndex(
                    node.treeView.index(node.row, node.column), ItemSelectionModel.ClearAndSelect)
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
                onTapped: {
                    tree.forceActiveFocus()
                    node.makeCurrent()
                }
                onDoubleTapped: tree.activated(node.session, node.agent)
            }
            TapHandler {
                acceptedButtons: Qt.RightButton
                onTapped: (eventPoint, button) => {
                    tree.forceActiveFocus()
                    node.makeCurrent()
                    tree.contextMenuRequested(node.session, node.agent,
                                              node.mapToItem(tree, eventPoint.position))
                }
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
                // Running indicator: green while something runs in this scope.
                Rectangle {
                    anchors.verticalCenter: parent.verticalCenter
                    width: 7
                    height: 7
                    radius: 3.5
                    color: node.running > 0 ? Theme.success : "transparent"
                    border.width: node.running > 0 ? 0 : 1
                    border.color: Theme.textFaint
                }
                Text {
                    anchors.verticalCenter: parent.verticalCenter
                    text: node.name
                    color: Theme.text
                    font.pixelSize: Theme.fontSize
                    font.weight: node.isSession ? Font.DemiBold : Font.Normal
                }
            }
            Text {
                anchors.right: parent.right
                anchors.rightMargin: 14
                anchors.verticalCenter: parent.verticalCenter
                visible: node.total > 0
                text: node.running + "/" + node.total
                color: node.running > 0 ? Theme.textDim : Theme.textFaint
                font.family: Theme.monoFamily
                font.pixelSize: Theme.smallFontSize
            }
        }
    }
}
