pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

// The main window: the session tree, and an overview of the selected scope.
// Right-click a session or an agent → Processes… opens a ProcWindow on it.
ThemedWindow {
    id: root

    required property var sessionModel
    required property var activeScope
    required property var controller
    // The overview table: a ProcModel the window keeps on the active scope.
    required property var overviewModel
    // The application: openProcWindow(session, agent) -> window.
    required property var workspace

    // The scope the context menu acts on (the node that was right-clicked).
    property string menuSession
    property string menuAgent

    width: 1100
    height: 680
    minimumWidth: 720
    minimumHeight: 420
    visible: true
    title: "procwindow"

    function openProcesses(session: string, agent: string): var {
        if (session.length === 0)
            return null
        return workspace.openProcWindow(session, agent)
    }
    function openScopeMenu(session: string, agent: string, position: point) {
        if (session.length === 0)
            return
        menuSession = session
        menuAgent = agent
        scopeMenu.popup(tree, position.x, position.y)
    }
    function openRunDialog() {
        runDialog.openFor(activeScope.session.length > 0 ? activeScope.session : "default",
                          activeScope.agent)
    }
    function showMessage(message: string, isError: bool) {
        statusText.text = message
        statusText.isError = isError
        statusTimer.restart()
    }


    Connections {
        target: root.controller
        function onError(message: string) { root.showMessage(message, true) }
        function onStarted(procId: int) { root.showMessage(qsTr("Started process %1").arg(procId), false) }
    }
    Connections {
        target: root.activeScope
        function onChanged() {
            root.overviewModel.setScope(root.activeScope.session, root.activeScope.agent)
            Qt.callLater(root.syncTreeToScope)
        }
    }
    function syncTreeToScope() {
        if (activeScope.session !== tree.currentSession || activeScope.agent !== tree.currentAgent)
            tree.selectScope(activeScope.session, activeScope.agent)
    }
    Component.onCompleted: {
        overviewModel.setScope(activeScope.session, activeScope.agent)
        Qt.callLater(syncTreeToScope)
    }
    onClosing: workspace.quit()

    // -- keyboard ----------------------------------------------------------------------

    Shortcut {
        sequences: ["Menu", "Shift+F10"]
        onActivated: root.openScopeMenu(tree.currentSession, tree.currentAgent, tree.currentNodePosition())
    }
    Shortcut {
        sequence: "Ctrl+O"
        onActivated: root.openProcesses(root.activeScope.session, root.activeScope.agent)
    }
    Shortcut {
        sequence: "Ctrl+N"
        onActivated: root.openRunDialog()
    }

    // -- layout ------------------------------------------------------------------------

    header: Rectangle {
        implicitHeight: Theme.barHeight + 6
        color: Theme.header

        RowLayout {
            anchors.fill: parent
            anchors.leftMargin: Theme.spacing + 6
            anchors.rightMargin: Theme.spacing + 6
            spacing: Theme.spacing

            Text {
                text: "procwindow"
                color: Theme.text
                font.pixelSize: Theme.fontSize + 1
                font.weight: Font.DemiBold
                Layout.rightMargin: Theme.spacing * 2
            }
            ToolbarButton {
                objectName: "runButton"
                text: qsTr("Run…")
                iconName: "run"
                tip: qsTr("Run a command in the selected scope")
                shortcutText: "Ctrl+N"
                onClicked: root.openRunDialog()
            }
            ToolbarButton {
                objectName: "processesButton"
                text: qsTr("Processes…")
                iconName: "processes"
                tip: qsTr("Open the processes of the selected scope")
                shortcutText: "Ctrl+O"
                enabled: root.activeScope.session.length > 0
                onClicked: root.openProcesses(root.activeScope.session, root.activeScope.agent)
            }
            ToolbarButton {
                objectName: "terminateAllButton"
                text: qsTr("Terminate all")
                iconName: "term"
                tip: qsTr("Terminate every process of the selected scope")
                enabled: root.activeScope.session.length > 0
                onClicked: root.controller.termAll(root.activeScope.session, root.activeScope.agent)
            }
            Item { Layout.fillWidth: true }
        }
        Rectangle {
            anchors.bottom: parent.bottom
            width: parent.width
            height: 1
            color: Theme.border
        }
    }

    SplitView {
        anchors.fill: parent
        orientation: Qt.Horizontal

        handle: Rectangle {
            implicitWidth: 1
            color: SplitHandle.hovered || SplitHandle.pressed ? Theme.accent : Theme.border
        }

        // -- sessions --------------------------------------------------------------------
        ColumnLayout {
            SplitView.preferredWidth: 250
            SplitView.minimumWidth: 180
            spacing: 0

            Rectangle {
                Layout.fillWidth: true
                Layout.preferredHeight: 32
                color: Theme.surface
                Text {
                    anchors.left: parent.left
                    anchors.leftMargin: Theme.spacing + 6
                    anchors.verticalCenter: parent.verticalCenter
                    text: qsTr("Sessions")
                    color: Theme.textDim
                    font.pixelSize: Theme.smallFontSize
                    font.weight: Font.DemiBold
                    font.capitalization: Font.AllUppercase
                    font.letterSpacing: 0.6
                }
            }
            SessionTree {
                id: tree
                objectName: "sessionTreePanel"
                Layout.fillWidth: true
                Layout.fillHeight: true
                focus: true
                sessionModel: root.sessionModel
                onScopeSelected: (session, agent) => root.activeScope.setScope(session, agent)
                onContextMenuRequested: (session, agent, position) => root.openScopeMenu(session, agent, position)
                onActivated: (session, agent) => root.openProcesses(session, agent)
            }
        }

        // -- the selected scope ------------------------------------------------------------
        ColumnLayout {
            SplitView.fillWidth: true
            spacing: 0

            Rectangle {
                Layout.fillWidth: true
                Layout.preferredHeight: 64
                color: Theme.window

                ColumnLayout {
                    anchors.left: parent.left
                    anchors.right: parent.right
                    anchors.verticalCenter: parent.verticalCenter
                    anchors.leftMargin: Theme.spacing * 2
                    anchors.rightMargin: Theme.spacing * 2
                    spacing: 2

                    Text {
                        objectName: "overviewTitle"
                        text: root.activeScope.session.length === 0 ? qsTr("No scope selected")
                              : root.activeScope.agent.length > 0
                                ? root.activeScope.session + " / " + root.activeScope.agent
                                : root.activeScope.session
                        color: Theme.text
                        font.pixelSize: Theme.fontSize + 5
                        font.weight: Font.DemiBold
                        elide: Text.ElideRight
                        Layout.fillWidth: true
                    }
                    Text {
                        text: root.activeScope.session.length === 0
                              ? qsTr("Select a session or an agent on the left.")
                              : (root.overviewModel.count === 1 ? qsTr("1 process")
                                 : qsTr("%1 processes").arg(root.overviewModel.count))
                                + (root.activeScope.agent.length > 0 ? "" : qsTr(" across all agents"))
                                + qsTr("  ·  right-click for Processes…  ·  double-click a row to stream it")
                        color: Theme.textFaint
                        font.pixelSize: Theme.smallFontSize + 1
                        elide: Text.ElideRight
                        Layout.fillWidth: true
                    }
                }
            }
            Rectangle {
                Layout.fillWidth: true
                Layout.preferredHeight: 1
                color: Theme.border
            }
            ProcTable {
                id: overview
                objectName: "overviewTable"
                Layout.fillWidth: true
                Layout.fillHeight: true
                procModel: root.overviewModel
                showActions: false
                onSelected: procId => overview.currentProcId = procId
                onStreamRequested: procId => {
                    const window = root.openProcesses(root.activeScope.session, root.activeScope.agent)
                    if (window)
                        window.stream(procId)
                }
            }
        }
    }

    footer: Rectangle {
        implicitHeight: 26
        color: Theme.header
        Rectangle {
            width: parent.width
            height: 1
            color: Theme.border
        }
        RowLayout {
            anchors.fill: parent
            anchors.leftMargin: Theme.spacing + 6
            anchors.rightMargin: Theme.spacing + 6
            Text {
                id: statusText
                objectName: "statusText"
                property bool isError: false
                Layout.fillWidth: true
                color: isError ? Theme.danger : Theme.textFaint
                font.pixelSize: Theme.smallFontSize + 1
                elide: Text.ElideRight
                Timer {
                    id: statusTimer
                    interval: 8000
                    onTriggered: statusText.text = ""
                }
            }
            Text {
                text: qsTr("Ctrl+N run  ·  Ctrl+O processes  ·  Shift+F10 menu")
                color: Theme.textFaint
                font.pixelSize: Theme.smallFontSize
            }
        }
    }

    // -- popups ------------------------------------------------------------------------

    Menu {
        id: scopeMenu
        objectName: "scopeMenu"
        padding: 4
        background: Rectangle {
            implicitWidth: 240
            color: Theme.raised
            radius: 6
            border.color: Theme.borderStrong
        }

        MenuEntry {
            objectName: "processesMenuItem"
            text: qsTr("Processes…")
            iconName: "processes"
            shortcutText: "Ctrl+O"
            onTriggered: root.openProcesses(root.menuSession, root.menuAgent)
        }
        MenuEntry {
            objectName: "runMenuItem"
            text: qsTr("Run…")
            iconName: "run"
            shortcutText: "Ctrl+N"
            onTriggered: runDialog.openFor(root.menuSession, root.menuAgent)
        }
        MenuSeparator {
            contentItem: Rectangle {
                implicitHeight: 1
                color: Theme.border
            }
        }
        MenuEntry {
            objectName: "terminateAllMenuItem"
            text: qsTr("Terminate all")
            iconName: "term"
            onTriggered: root.controller.termAll(root.menuSession, root.menuAgent)
        }
    }

    RunDialog {
        id: runDialog
        parent: Overlay.overlay
        onRunRequested: (session, agent, commandLine, cwd) => root.controller.run(session, agent, commandLine, cwd)
    }
}
