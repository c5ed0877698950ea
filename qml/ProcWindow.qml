pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

// The processes of one scope: a table (PID · Tool · Status · Runtime · Actions)
// over a live output pane. Unpinned, it follows the main window's active scope;
// pinned, it stays on its own.
ThemedWindow {
    id: root

    required property var procModel
    required property var outputModel
    required property var stats
    required property var controller
    // The main window's selection; null when there is nothing to follow (then pinned).
    property var activeScope: null
    property bool pinned: activeScope === null
    readonly property bool canFollow: activeScope !== null
    // The proc the keyboard acts on.
    property int currentProcId: -1

    // Emitted when the window has been closed: its owner releases it.
    signal finished()

    width: 1040
    height: 680
    minimumWidth: 720
    minimumHeight: 420
    title: procModel.title

    onClosing: root.finished()

    // -- what the controls and shortcuts do ------------------------------------------

    function stream(procId: int) {
        if (procId < 0)
            return
        currentProcId = procId
        outputModel.procId = procId
        output.jumpToLive()
    }
    function moveSelection(delta: int) {
        const count = procModel.count
        if (count === 0)
            return
        const row = procModel.rowOf(currentProcId)
        const next = row < 0 ? 0 : Math.max(0, Math.min(count - 1, row + delta))
        currentProcId = procModel.procIdAt(next)
        table.ensureVisible(currentProcId)
    }
    function followActiveScope() {
        if (pinned || !activeScope || activeScope.session.length === 0)
            return
        procModel.setScope(activeScope.session, activeScope.agent)
    }
    // After rows went away or the scope changed: keep a valid selection and stream.
    function settleSelection() {
        if (procModel.rowOf(outputModel.procId) < 0)
            outputModel.procId = -1
        if (procModel.rowOf(currentProcId) < 0)
            currentProcId = procModel.count > 0 ? procModel.procIdAt(0) : -1
        if (outputModel.procId < 0 && currentProcId >= 0)
            stream(currentProcId)
    }
    function showMessage(message: string, isError: bool) {
        banner.text = message
        banner.isError = isError
        banner.visible = true
        bannerTimer.restart()
    }

    // The window opens on the scope it was given, and follows later changes.
    Component.onCompleted: settleSelection()
    onPinnedChanged: if (!pinned) followActiveScope()

    Connections {
        target: root.activeScope
        enabled: root.canFollow && !root.pinned
        function onChanged() { root.followActiveScope() }
    }
    Connections {
        target: root.procModel
        function onModelReset() { Qt.callLater(root.settleSelection) }
        function onRowsRemoved() { Qt.callLater(root.settleSelection) }
        function onRowsInserted() { Qt.callLater(root.settleSelection) }
    }
    Connections {
        target: root.controller
        function onError(message: string) { root.showMessage(message, true) }
    }

    Binding {
        target: root.stats
        property: "procId"
        value: root.outputModel.procId
    }

    // -- keyboard ----------------------------------------------------------------------

    Shortcut { sequence: "Up"; onActivated: root.moveSelection(-1) }
    Shortcut { sequence: "Down"; onActivated: root.moveSelection(1) }
    Shortcut { sequences: ["Return", "Enter"]; onActivated: root.stream(root.currentProcId) }
    Shortcut { sequence: "Delete"; onActivated: if (root.currentProcId >= 0) root.controller.dismiss(root.currentProcId) }
    Shortcut { sequence: "Ctrl+T"; onActivated: if (root.currentProcId >= 0) root.controller.term(root.currentProcId) }
    Shortcut { sequence: "Ctrl+K"; onActivated: if (root.currentProcId >= 0) root.controller.kill(root.currentProcId) }
    Shortcut { sequence: "Ctrl+P"; enabled: root.canFollow; onActivated: root.pinned = !root.pinned }
    Shortcut { sequence: "Ctrl+F"; onActivated: output.focusFilter() }
    Shortcut {
        sequence: "Esc"
        onActivated: {
            output.clearFilter()
            output.clearSelection()
        }
    }
    Shortcut { sequence: "Ctrl+C"; onActivated: output.copySelection() }
    Shortcut { sequence: "Ctrl+Shift+C"; onActivated: output.copyAll() }
    Shortcut { sequence: "End"; onActivated: output.jumpToLive() }

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
                text: root.procModel.agent.length > 0
                      ? root.procModel.session + " / " + root.procModel.agent
                      : root.procModel.session + qsTr(" · all agents")
                color: Theme.textDim
                font.pixelSize: Theme.fontSize + 1
                elide: Text.ElideRight
                Layout.fillWidth: true
            }
            Text {
                objectName: "pinStateText"
                visible: root.canFollow
                text: root.pinned ? qsTr("pinned") : qsTr("follows selection")
                color: root.pinned ? Theme.accent : Theme.textFaint
                font.pixelSize: Theme.smallFontSize
            }
            IconButton {
                objectName: "pinButton"
                visible: root.canFollow
                checkable: true
                checked: root.pinned
                iconName: root.pinned ? "pin" : "pin-off"
                tip: root.pinned ? qsTr("Unpin: follow the selected session") : qsTr("Pin to this scope")
                shortcutText: "Ctrl+P"
                onToggled: root.pinned = checked
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
        property alias text: bannerText.text
        property bool isError: false
        z: 10
        visible: false
        anchors.horizontalCenter: parent.horizontalCenter
        y: Theme.spacing
        width: Math.min(parent.width - 4 * Theme.spacing, bannerRow.implicitWidth + 2 * Theme.spacing)
        height: 30
        radius: Theme.radius
        color: isError ? "#4a2529" : "#243a2a"
        border.color: isError ? Theme.danger : Theme.success

        Timer {
            id: bannerTimer
            interval: banner.isError ? 6000 : 2000
            onTriggered: banner.visible = false
        }
        Row {
            id: bannerRow
            anchors.centerIn: parent
            spacing: Theme.spacing
            Text {
                id: bannerText
                color: Theme.text
                font.pixelSize: Theme.fontSize
                anchors.verticalCenter: parent.verticalCenter
            }
        }
        TapHandler { onTapped: banner.visible = false }
    }

    SplitView {
        anchors.fill: parent
        orientation: Qt.Vertical

        handle: Rectangle {
            implicitHeight: 5
            color: SplitHandle.hovered || SplitHandle.pressed ? Theme.accentSoft : Theme.border
        }

        ProcTable {
            id: table
            objectName: "procTable"
            procModel: root.procModel
            currentProcId: root.currentProcId
            streamingProcId: root.outputModel.procId
            SplitView.preferredHeight: Math.max(150, root.height * 0.36)
            SplitView.minimumHeight: 96

            onSelected: procId => root.currentProcId = procId
            onStreamRequested: procId => root.stream(procId)
            onTermRequested: procId => {
                root.currentProcId = procId
                root.controller.term(procId)
            }
            onKillRequested: procId => {
                root.currentProcId = procId
                root.controller.kill(procId)
            }
            onDismissRequested: procId => root.controller.dismiss(procId)
            onRestartRequested: procId => root.controller.restart(procId)
        }

        OutputPane {
            id: output
            objectName: "outputPane"
            outputModel: root.outputModel
            stats: root.stats
            SplitView.fillHeight: true
            SplitView.minimumHeight: 140
            onCopied: what => root.showMessage(what, false)
        }
    }
}
