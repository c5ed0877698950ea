pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Procwindow

// The processes of one scope: a table (ID · PID · Tool · Status · Runtime · Actions)
// over a live output pane, and between them, on demand, the processes the
// streaming command is made of (its tree). Unpinned, it follows the main window's active scope;
// pinned, it stays on its own. What it shows and decides is its ProcWindowModel's.
ThemedWindow {
    id: root

    required property ProcWindowModel viewModel
    // The window's models, for the program that opened it: window.property("outputModel").
    // Typed QtObject, not ProcModel/OutputModel: PySide's QObject.property() converts a
    // QObject*, and has no converter for a pointer to a type registered from Python.
    readonly property QtObject procModel: viewModel.procModel
    readonly property QtObject outputModel: viewModel.outputModel

    // Emitted when the window has been closed: its owner releases it.
    signal finished()

    width: 1040
    height: 680
    // 700 px: the narrowest the header bar and the output pane's tools are laid out
    // for. The table fits in it: the columns that have no room go, the actions stay.
    minimumWidth: Math.max(700, table.minimumWidth)
    minimumHeight: 420
    title: viewModel.windowTitle

    // The window opens on the first process of its scope, streaming.
    Component.onCompleted: root.viewModel.settleSelection()
    onClosing: root.finished()

    Connections {
        target: root.viewModel
        function onRevealRow(row: int) { table.view.positionViewAtRow(row, TableView.Contain) }
        function onRevealHistoryRow(row: int) { history.view.positionViewAtIndex(row, ListView.Contain) }
        function onRevealLine(row: int) { output.showRow(row) }
        function onLiveRequested() { output.jumpToLive() }
        function onLeaveFilter() { table.forceActiveFocus() }
    }

    // -- keyboard ----------------------------------------------------------------------

    // Up and Down move the row, except in the stdin line (a shell's history is not ours).
    Shortcut { sequence: "Up"; enabled: !output.inputFocused; onActivated: root.viewModel.moveSelection(-1) }
    Shortcut { sequence: "Down"; enabled: !output.inputFocused; onActivated: root.viewModel.moveSelection(1) }
    Shortcut { sequences: ["Return", "Enter"]; onActivated: root.viewModel.stream(root.viewModel.currentProcId) }
    Shortcut { sequence: "Delete"; onActivated: root.viewModel.dismissCurrent() }
    // Right and Left show and hide the earlier runs of a workspace command's row.
    Shortcut { sequence: "Right"; enabled: !output.inputFocused; onActivated: root.viewModel.showRuns(true) }
    Shortcut { sequence: "Left"; enabled: !output.inputFocused; onActivated: root.viewModel.showRuns(false) }
    Shortcut { sequence: "Ctrl+T"; onActivated: root.viewModel.termCurrent() }
    Shortcut { sequence: "Ctrl+K"; onActivated: root.viewModel.killCurrent() }
    Shortcut { sequence: "Ctrl+R"; onActivated: root.viewModel.restartCurrent() }
    Shortcut { sequence: "Ctrl+P"; enabled: root.viewModel.canFollow; onActivated: root.viewModel.pinned = !root.viewModel.pinned }
    Shortcut { sequence: "Ctrl+F"; onActivated: output.focusFilter() }
    Shortcut { sequence: "Esc"; onActivated: root.viewModel.escape(output.filterFocused) }
    Shortcut { sequence: "Ctrl+C"; onActivated: root.viewModel.copySelection() }
    Shortcut { sequence: "Ctrl+Shift+C"; onActivated: root.viewModel.copyAll() }
    Shortcut { sequence: "End"; onActivated: output.jumpToLive() }
    Shortcut { sequence: "Ctrl+N"; onActivated: root.viewModel.requestRun() }
    Shortcut { sequence: "Ctrl+H"; onActivated: root.viewModel.showHistory = !root.viewModel.showHistory }
    Shortcut { sequence: "Ctrl+E"; onActivated: root.viewModel.treeModel.active = !root.viewModel.treeModel.active }

    // -- layout ------------------------------------------------------------------------

    header: Rectangle {
        implicitHeight: Theme.barHeight + 6
        color: Theme.header

        RowLayout {
            anchors.fill: parent
            anchors.leftMargin: Theme.spacing + 6
            anchors.rightMargin: Theme.spacing
            spacing: Theme.spacing

            Image {
                source: Theme.icon("processes")
                sourceSize.width: 32
                sourceSize.height: 32
                Layout.preferredWidth: 16
                Layout.preferredHeight: 16
                opacity: 0.7
            }
            Text {
                objectName: "windowTitle"
                text: qsTr("Processes")
                color: Theme.text
                font.pixelSize: Theme.fontSize + 1
                font.weight: Font.DemiBold
            }
            Text {
                objectName: "scopeText"
                text: root.viewModel.scopeText
                color: Theme.textDim
                font.pixelSize: Theme.fontSize + 1
                elide: Text.ElideRight
                Layout.fillWidth: true
            }
            ToolbarButton {
                objectName: "historyButton"
                text: qsTr("History")
                iconName: "history"
                checkable: true
                checked: root.viewModel.showHistory
                tip: root.viewModel.historyTip
                shortcutText: "Ctrl+H"
                onToggled: root.viewModel.showHistory = checked
            }
            ToolbarButton {
                objectName: "treeButton"
                text: qsTr("Tree")
                iconName: "processes"
                checkable: true
                checked: root.viewModel.treeModel.active
                tip: checked ? qsTr("Hide the processes of the streaming command")
                             : qsTr("The processes the streaming command is made of: PID, state, CPU, memory")
                shortcutText: "Ctrl+E"
                onToggled: root.viewModel.treeModel.active = checked
            }
            ToolbarButton {
                objectName: "runButton"
                text: qsTr("Run…")
                iconName: "run"
                tip: qsTr("Run a command in this window's scope")
                shortcutText: "Ctrl+N"
                onClicked: root.viewModel.requestRun()
            }
            Text {
                objectName: "pinStateText"
                visible: root.viewModel.canFollow
                text: root.viewModel.pinText
                color: root.viewModel.pinned ? Theme.accent : Theme.textFaint
                font.pixelSize: Theme.smallFontSize
            }
            IconButton {
                objectName: "pinButton"
                visible: root.viewModel.canFollow
                checkable: true
                checked: root.viewModel.pinned
                iconName: root.viewModel.pinned ? "pin" : "pin-off"
                tip: root.viewModel.pinTip
                shortcutText: "Ctrl+P"
                onToggled: root.viewModel.pinned = checked
            }
            IconButton {
                objectName: "closeButton"
                iconName: "close"
                tip: qsTr("Close")
                onClicked: root.close()
            }
        }
        Rectangle {
            anchors.bottom: parent.bottom
            width: parent.width
            height: 1
            color: Theme.border
        }
    }

    // Messages (errors from the controller, "copied") slide over the top of the content.
    Rectangle {
        id: banner
        objectName: "banner"
        z: 10
        visible: root.viewModel.bannerVisible
        anchors.horizontalCenter: parent.horizontalCenter
        y: Theme.spacing
        width: Math.min(parent.width - 4 * Theme.spacing, bannerRow.implicitWidth + 2 * Theme.spacing)
        height: 30
        radius: Theme.radius
        color: root.viewModel.bannerError ? Theme.bannerError : Theme.bannerInfo
        border.color: root.viewModel.bannerError ? Theme.danger : Theme.success

        Row {
            id: bannerRow
            anchors.centerIn: parent
            spacing: Theme.spacing
            Text {
                objectName: "bannerText"
                text: root.viewModel.bannerText
                color: Theme.text
                font.pixelSize: Theme.fontSize
                anchors.verticalCenter: parent.verticalCenter
            }
        }
        TapHandler { onTapped: root.viewModel.hideBanner() }
    }

    SplitView {
        anchors.fill: parent
        orientation: Qt.Vertical

        handle: Rectangle {
            implicitHeight: 5
            color: SplitHandle.hovered || SplitHandle.pressed ? Theme.accentSoft : Theme.border
        }

        Item {
            SplitView.preferredHeight: Math.max(150, root.height * 0.36)
            SplitView.minimumHeight: 96

            // Workspace commands of this scope with no process yet (waiting for a
            // dependency, or skipped).
            Rectangle {
                id: workspaceBar
                objectName: "workspaceBar"
                readonly property string text: root.viewModel.workspaceStatus.pendingText
                visible: text.length > 0
                anchors.left: parent.left
                anchors.right: parent.right
                height: visible ? 26 : 0
                color: Theme.surface
                Text {
                    objectName: "workspaceText"
                    anchors.fill: parent
                    anchors.leftMargin: Theme.spacing
                    anchors.rightMargin: Theme.spacing
                    verticalAlignment: Text.AlignVCenter
                    text: workspaceBar.text
                    color: Theme.warning
                    font.pixelSize: Theme.smallFontSize + 1
                    elide: Text.ElideRight
                    HoverHandler { id: barHover }
                    ToolTip.visible: barHover.hovered && truncated
                    ToolTip.text: workspaceBar.text
                }
            }

            ProcTable {
                id: table
                objectName: "procTable"
                anchors.left: parent.left
                anchors.right: parent.right
                anchors.top: workspaceBar.bottom
                anchors.bottom: parent.bottom
                visible: !root.viewModel.showHistory
                procModel: root.viewModel.procModel
                settingsKey: "procWindow"
                currentProcId: root.viewModel.currentProcId
                streamingProcId: root.viewModel.streamingProcId

                onSelected: procId => root.viewModel.select(procId)
                onStreamRequested: procId => root.viewModel.stream(procId)
                onTermRequested: procId => root.viewModel.term(procId)
                onKillRequested: procId => root.viewModel.kill(procId)
                onDismissRequested: procId => root.viewModel.controller.dismiss(procId)
                onRestartRequested: procId => root.viewModel.restart(procId)
            }
            HistoryTable {
                id: history
                objectName: "historyTable"
                anchors.left: parent.left
                anchors.right: parent.right
                anchors.top: workspaceBar.bottom
                anchors.bottom: parent.bottom
                visible: root.viewModel.showHistory
                historyModel: root.viewModel.historyModel
                currentProcId: root.viewModel.currentProcId
                streamingProcId: root.viewModel.streamingProcId
                onSelected: procId => root.viewModel.select(procId)
            }
        }

        // The processes of the streaming command (Tree, Ctrl+E).
        ProcTreePanel {
            id: tree
            objectName: "treePanel"
            visible: root.viewModel.treeModel.active
            treeModel: root.viewModel.treeModel
            controller: root.viewModel.controller
            procId: root.viewModel.streamingProcId
            SplitView.preferredHeight: Math.max(110, root.height * 0.22)
            SplitView.minimumHeight: 84
            onCloseRequested: root.viewModel.treeModel.active = false
        }

        OutputPane {
            id: output
            objectName: "outputPane"
            viewModel: root.viewModel
            SplitView.fillHeight: true
            SplitView.minimumHeight: 140
        }
    }

    // Opens on root.viewModel.requestRun(), on the window's scope.
    RunDialog {
        parent: Overlay.overlay
        form: root.viewModel.runForm
    }
}
