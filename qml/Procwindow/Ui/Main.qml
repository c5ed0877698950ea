pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Procwindow

// The main window: the session tree, and an overview of the selected scope.
// Right-click a session or an agent → Processes… opens a ProcWindow on it.
// What it shows and decides is its MainWindowModel's.
ThemedWindow {
    id: root

    required property MainWindowModel viewModel
    readonly property ActiveScope activeScope: viewModel.activeScope

    width: 1100
    height: 680
    // 700 px: the narrowest the toolbar and the footer are laid out for. The session
    // tree at its narrowest fits beside the overview, its columns that have no room gone.
    minimumWidth: Math.max(700, sessionsPane.SplitView.minimumWidth + 1 + overview.minimumWidth)
    minimumHeight: 420
    visible: true
    title: "procwindow"

    onClosing: root.viewModel.quit()

    Connections {
        target: root.viewModel
        function onSearchFocusRequested() { searchPanel.focusField() }
    }
    Connections {
        target: root.viewModel.treeSelection
        function onScopeShown(index) { tree.view.expandToIndex(index); tree.view.positionViewAtIndex(index, TableView.Contain) }
    }

    // -- keyboard ----------------------------------------------------------------------

    Shortcut {
        sequences: ["Menu", "Shift+F10"]
        onActivated: tree.menuRequested()
    }
    Shortcut {
        sequence: "Ctrl+O"
        onActivated: root.viewModel.openProcesses(root.activeScope.session, root.activeScope.agent)
    }
    Shortcut {
        sequence: "Ctrl+N"
        onActivated: root.viewModel.requestRun(root.activeScope.session, root.activeScope.agent)
    }
    Shortcut {
        sequence: "Ctrl+Shift+F"
        onActivated: root.viewModel.showSearch()
    }
    Shortcut {
        sequence: "Ctrl+Shift+A"
        enabled: root.viewModel.attachForm.available
        onActivated: root.viewModel.requestAttach()
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
                onClicked: root.viewModel.requestRun(root.activeScope.session, root.activeScope.agent)
            }
            ToolbarButton {
                objectName: "processesButton"
                text: qsTr("Processes…")
                iconName: "processes"
                tip: qsTr("Open the processes of the selected scope")
                shortcutText: "Ctrl+O"
                enabled: root.viewModel.hasScope
                onClicked: root.viewModel.openProcesses(root.activeScope.session, root.activeScope.agent)
            }
            ToolbarButton {
                objectName: "terminateAllButton"
                text: qsTr("Terminate all")
                iconName: "term"
                tip: qsTr("Terminate every process of the selected scope")
                enabled: root.viewModel.hasScope
                onClicked: root.viewModel.controller.termAll(root.activeScope.session, root.activeScope.agent)
            }
            Item { Layout.fillWidth: true }
            ToolbarButton {
                objectName: "searchButton"
                text: qsTr("Search…")
                iconName: "search"
                tip: qsTr("Search the output of every run, live and past")
                shortcutText: "Ctrl+Shift+F"
                onClicked: root.viewModel.showSearch()
            }
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
            id: sessionsPane
            SplitView.preferredWidth: 250
            SplitView.minimumWidth: 180
            spacing: 0

            Rectangle {
                Layout.fillWidth: true
                Layout.preferredHeight: 32
                color: Theme.surface
                IconButton {
                    objectName: "attachButton"
                    anchors.right: parent.right
                    anchors.rightMargin: Theme.spacing
                    anchors.verticalCenter: parent.verticalCenter
                    visible: root.viewModel.attachForm.available
                    iconName: "attach"
                    tip: qsTr("Attach to a server: its processes beside these (Ctrl+Shift+A)")
                    onClicked: root.viewModel.requestAttach()
                }
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
                sessionModel: root.viewModel.sessionModel
                selection: root.viewModel.treeSelection
                onContextMenuRequested: (session, agent, position) => { root.viewModel.setMenuScope(session, agent); scopeMenu.popup(tree, position.x, position.y) }
                onActivated: (session, agent) => root.viewModel.openProcesses(session, agent)
            }
        }

        // -- the selected scope (or the search) ---------------------------------------------
        Item {
            SplitView.fillWidth: true
            // Narrower, the overview would have no room for what names a row: the
            // session tree gives way.
            SplitView.minimumWidth: overview.minimumWidth

        SearchPanel {
            id: searchPanel
            objectName: "searchPanel"
            anchors.fill: parent
            visible: root.viewModel.searchShown
            searchModel: root.viewModel.searchModel
            placeholder: root.viewModel.searchPlaceholder
            onOpenLine: (host, procId, seq) => root.viewModel.openLine(host, procId, seq)
            onCloseRequested: { root.viewModel.searchShown = false; tree.forceActiveFocus() }
        }

        ColumnLayout {
            anchors.fill: parent
            visible: !root.viewModel.searchShown
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
                        text: root.viewModel.overviewTitle
                        color: Theme.text
                        font.pixelSize: Theme.fontSize + 5
                        font.weight: Font.DemiBold
                        elide: Text.ElideRight
                        Layout.fillWidth: true
                    }
                    Text {
                        objectName: "overviewSummary"
                        text: root.viewModel.overviewSummary
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
                procModel: root.viewModel.overviewModel
                showActions: false
                settingsKey: "overview"
                onSelected: procId => overview.currentProcId = procId
                onStreamRequested: procId => root.viewModel.streamInWindow(procId)
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
                objectName: "statusText"
                Layout.fillWidth: true
                text: root.viewModel.statusText
                color: root.viewModel.statusError ? Theme.danger : Theme.textFaint
                font.pixelSize: Theme.smallFontSize + 1
                elide: Text.ElideRight
            }
            Text {
                text: qsTr("Ctrl+N run  ·  Ctrl+O processes  ·  Ctrl+Shift+F search  ·  Shift+F10 menu")
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
            enabled: root.viewModel.menuSession.length > 0
            onTriggered: root.viewModel.openProcesses(root.viewModel.menuSession, root.viewModel.menuAgent)
        }
        MenuEntry {
            objectName: "runMenuItem"
            text: qsTr("Run…")
            iconName: "run"
            shortcutText: "Ctrl+N"
            onTriggered: root.viewModel.requestRun(root.viewModel.menuSession, root.viewModel.menuAgent)
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
            enabled: root.viewModel.menuSession.length > 0
            onTriggered: root.viewModel.terminateAll()
        }
        MenuEntry {
            objectName: "detachMenuItem"
            text: qsTr("Detach")
            iconName: "dismiss"
            visible: root.viewModel.menuDetachable
            height: visible ? implicitHeight : 0
            onTriggered: root.viewModel.detach()
        }
    }

    // Opens on root.viewModel.requestRun(session, agent).
    RunDialog {
        parent: Overlay.overlay
        form: root.viewModel.runForm
    }
    // Opens on root.viewModel.requestAttach().
    AttachDialog {
        parent: Overlay.overlay
        form: root.viewModel.attachForm
    }
}
