pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls

// The process table: a header and one row per process, newest first.
// It shows a ProcModel and emits what the person asked for; the page that holds
// it decides what happens (the KDE table/page split).
FocusScope {
    id: table

    required property var procModel
    // The proc the keyboard acts on (a row highlight), and the one streaming output.
    property int currentProcId: -1
    property int streamingProcId: -1
    // The main window's overview hides the action buttons.
    property bool showActions: true
    // Shortcut texts for the tooltips of the row buttons (the page owns the shortcuts).
    property string streamShortcut: "Enter"
    property string termShortcut: "Ctrl+T"
    property string killShortcut: "Ctrl+K"
    property string dismissShortcut: "Del"

    signal selected(int procId)
    signal streamRequested(int procId)
    signal termRequested(int procId)
    signal killRequested(int procId)
    signal dismissRequested(int procId)
    signal restartRequested(int procId)

    // Column keys ("pid", "agent", "tool", ...): the session-wide view adds "agent".
    readonly property var columnKeys: procModel ? procModel.columnNames : []
    readonly property int actionsWidth: showActions ? 5 * Theme.buttonSize + 4 * 2 + 2 * Theme.spacing : 0

    function fixedWidth(key: string): int {
        switch (key) {
        case "pid": return 64
        case "agent": return 104
        case "status": return 190
        case "runtime": return 88
        case "actions": return table.actionsWidth
        default: return -1
        }
    }

    function columnWidth(column: int): real {
        const key = columnKeys[column] ?? ""
        const fixed = fixedWidth(key)
        if (fixed >= 0)
            return fixed
        let used = 0
        for (const other of columnKeys) {
            const w = fixedWidth(other)
            if (w > 0)
                used += w
        }
        return Math.max(180, view.width - used)
    }

    // The row of a proc, for keeping it in view after keyboard moves.
    function ensureVisible(procId: int) {
        const row = procModel.rowOf(procId)
        if (row >= 0)
            view.positionViewAtRow(row, TableView.Contain)
    }

    onWidthChanged: view.forceLayout()
    onShowActionsChanged: view.forceLayout()
    onColumnKeysChanged: view.forceLayout()

    Rectangle {
        anchors.fill: parent
        color: Theme.window
    }

    HorizontalHeaderView {
        id: header
        objectName: "procTableHeader"
        anchors.left: parent.left
        anchors.right: parent.right
        anchors.top: parent.top
        syncView: view
        clip: true
        interactive: false
        resizableColumns: false
        boundsBehavior: Flickable.StopAtBounds

        delegate: Rectangle {
            id: headerCell
            required property string display
            required property int column
            readonly property string key: table.columnKeys[column] ?? ""

            implicitHeight: 28
            color: Theme.header

            Text {
                anchors.fill: parent
                anchors.leftMargin: headerCell.key === "actions" ? Theme.spacing + 2 : Theme.spacing + 4
                anchors.rightMargin: Theme.spacing
                verticalAlignment: Text.AlignVCenter
                horizontalAlignment: headerCell.key === "runtime" ? Text.AlignRight : Text.AlignLeft
                text: headerCell.display
                color: Theme.textDim
                font.pixelSize: Theme.smallFontSize
                font.weight: Font.DemiBold
                font.capitalization: Font.AllUppercase
                font.letterSpacing: 0.6
                elide: Text.ElideRight
            }
            Rectangle {
                anchors.bottom: parent.bottom
                width: parent.width
                height: 1
                color: Theme.border
            }
        }
    }

    TableView {
        id: view
        objectName: "procTableView"
        anchors.left: parent.left
        anchors.right: parent.right
        anchors.top: header.bottom
        anchors.bottom: parent.bottom
        clip: true
        model: table.procModel
        boundsBehavior: Flickable.StopAtBounds
        acceptedButtons: Qt.NoButton
        columnSpacing: 0
        rowSpacing: 0
        columnWidthProvider: column => table.columnWidth(column)
        // Rows are few and change state in place: fresh delegates keep no stale state.
        reuseItems: false
        property int hoveredRow: -1

        // The model refreshes runtimes only for the rows on screen.
        function reportVisibleRows() {
            if (table.procModel)
                table.procModel.setVisibleRows(topRow, bottomRow)
        }
        onTopRowChanged: Qt.callLater(reportVisibleRows)
        onBottomRowChanged: Qt.callLater(reportVisibleRows)

        ScrollBar.vertical: ScrollBar { policy: ScrollBar.AsNeeded }

        delegate: Rectangle {
            id: cell

            required property int row
            required property int column
            required property int procId
            required property string columnName
            required property string display
            required property string tool
            required property string command
            required property string statusText
            required property color statusColor
            required property string exitReason
            required property int exitCode
            required property string runtimeText
            required property bool canTerm
            required property bool canKill
            required property bool canDismiss
            required property bool canRestart

            readonly property string key: columnName
            readonly property bool isCurrent: procId === table.currentProcId
            readonly property bool isStreaming: procId === table.streamingProcId

            implicitHeight: Theme.rowHeight
            color: isCurrent ? (table.activeFocus || Window.active ? Theme.selection : Theme.selectionInactive)
                 : view.hoveredRow === row ? Theme.hover
                 : "transparent"

            // The streaming row carries an accent bar on its left edge.
            Rectangle {
                visible: cell.isStreaming && cell.column === 0
                width: 2
                height: parent.height
                color: Theme.accent
            }

            HoverHandler {
                onHoveredChanged: {
                    if (hovered)
                        view.hoveredRow = cell.row
                    else if (view.hoveredRow === cell.row)
                        view.hoveredRow = -1
                }
            }
            TapHandler {
                acceptedButtons: Qt.LeftButton
                onTapped: table.selected(cell.procId)
                onDoubleTapped: table.streamRequested(cell.procId)
            }

            Loader {
                anchors.fill: parent
                anchors.leftMargin: Theme.spacing + 4
                anchors.rightMargin: Theme.spacing
                sourceComponent: cell.key === "actions" ? actionsCell
                               : cell.key === "status" ? statusCell
                               : cell.key === "tool" ? toolCell
                               : textCell
            }

            Component {
                id: textCell
                Text {
                    text: cell.display
                    color: cell.key === "pid" ? Theme.text : Theme.textDim
                    font.family: cell.key === "pid" || cell.key === "runtime" ? Theme.monoFamily : Theme.uiFamily
                    font.pixelSize: cell.key === "pid" || cell.key === "runtime" ? Theme.monoFontSize : Theme.fontSize
                    horizontalAlignment: cell.key === "runtime" ? Text.AlignRight : Text.AlignLeft
                    verticalAlignment: Text.AlignVCenter
                    elide: Text.ElideRight
                }
            }

            Component {
                id: toolCell
                Row {
                    spacing: Theme.spacing
                    clip: true
                    Text {
                        id: toolName
                        height: parent.height
                        text: cell.tool
                        color: Theme.text
                        font.pixelSize: Theme.fontSize
                        verticalAlignment: Text.AlignVCenter
                    }
                    Text {
                        height: parent.height
                        width: parent.width - toolName.width - parent.spacing
                        text: cell.command
                        color: Theme.textFaint
                        font.family: Theme.monoFamily
                        font.pixelSize: Theme.monoFontSize
                        verticalAlignment: Text.AlignVCenter
                        elide: Text.ElideRight
                    }
                }
            }

            Component {
                id: statusCell
                Item {
                    HoverHandler { id: statusHover }
                    ToolTip.visible: statusHover.hovered && cell.exitReason.length > 0
                    ToolTip.delay: 500
                    ToolTip.text: qsTr("exit code %1 · reason %2").arg(cell.exitCode).arg(cell.exitReason)

                    Rectangle {
                        anchors.verticalCenter: parent.verticalCenter
                        width: 8
                        height: 8
                        radius: 4
                        color: Theme.statusTint(cell.statusColor)
                    }
                    Text {
                        objectName: "statusText-" + cell.procId
                        x: 15
                        width: parent.width - x
                        height: parent.height
                        text: cell.statusText
                        color: Theme.statusTint(cell.statusColor)
                        font.pixelSize: Theme.fontSize
                        verticalAlignment: Text.AlignVCenter
                        elide: Text.ElideRight
                    }
                }
            }

            Component {
                id: actionsCell
                Row {
                    spacing: 2
                    IconButton {
                        objectName: "streamButton-" + cell.procId
                        anchors.verticalCenter: parent.verticalCenter
                        iconName: "stream"
                        tip: cell.isStreaming ? qsTr("Streaming") : qsTr("Stream output")
                        shortcutText: table.streamShortcut
                        iconColor: cell.isStreaming ? Theme.accent : Theme.textDim
                        onClicked: table.streamRequested(cell.procId)
                    }
                    IconButton {
                        objectName: "termButton-" + cell.procId
                        anchors.verticalCenter: parent.verticalCenter
                        iconName: "term"
                        tip: qsTr("Terminate (SIGTERM, then SIGKILL)")
                        shortcutText: table.termShortcut
                        enabled: cell.canTerm
                        destructive: true
                        onClicked: table.termRequested(cell.procId)
                    }
                    IconButton {
                        objectName: "killButton-" + cell.procId
                        anchors.verticalCenter: parent.verticalCenter
                        iconName: "kill"
                        tip: qsTr("Kill (SIGKILL)")
                        shortcutText: table.killShortcut
                        enabled: cell.canKill
                        destructive: true
                        onClicked: table.killRequested(cell.procId)
                    }
                    IconButton {
                        objectName: "restartButton-" + cell.procId
                        anchors.verticalCenter: parent.verticalCenter
                        iconName: "restart"
                        tip: qsTr("Restart")
                        enabled: cell.canRestart
                        onClicked: table.restartRequested(cell.procId)
                    }
                    IconButton {
                        objectName: "dismissButton-" + cell.procId
                        anchors.verticalCenter: parent.verticalCenter
                        iconName: "dismiss"
                        tip: qsTr("Dismiss")
                        shortcutText: table.dismissShortcut
                        enabled: cell.canDismiss
                        onClicked: table.dismissRequested(cell.procId)
                    }
                }
            }

            Rectangle {
                anchors.bottom: parent.bottom
                width: parent.width
                height: 1
                color: Theme.divider
            }
        }
    }

    Text {
        objectName: "procTableEmpty"
        anchors.centerIn: view
        visible: view.rows === 0
        text: qsTr("No processes in this scope")
        color: Theme.textFaint
        font.pixelSize: Theme.fontSize
    }
}
