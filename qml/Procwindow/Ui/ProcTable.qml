pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import Qt.labs.qmlmodels
import Procwindow

// The process table: a header and one row per process, newest first.
// It shows a ProcModel and emits what the person asked for; the page that holds
// it decides what happens (the KDE table/page split). Each column has its own
// cell, which reads only the roles it shows. A click on a header sorts by its
// column (again: descending; a third time: newest first again); a drag on a
// header's right edge resizes its column (a double click: back to automatic); a
// right click on the header opens the column chooser (hide or show a column).
// Columns that do not fit go, the least needed first (ProcTableStyle): the
// actions stay whole at any width the window allows. With a settingsKey, what the
// person chose (hidden columns, widths, sort) is kept for the next table of the kind.
// While the pointer is over the rows the model holds their order: no row moves
// under it as values change (the sort arrow dims while a reorder waits).
FocusScope {
    id: table

    required property ProcModel procModel
    // The proc the keyboard acts on (a row highlight), and the one streaming output.
    property int currentProcId: -1
    property int streamingProcId: -1
    // The main window's overview hides the action buttons.
    property bool showActions: true
    // Shortcut texts for the tooltips of the row buttons (the page owns the shortcuts).
    property string streamShortcut: "Enter"
    property string termShortcut: "Ctrl+T"
    property string killShortcut: "Ctrl+K"
    property string restartShortcut: "Ctrl+R"
    property string dismissShortcut: "Del"
    // The kind of window the table is in ("overview", "procWindow"): what the person
    // chose is remembered per kind ("": nothing is remembered).
    property string settingsKey: ""
    readonly property alias view: view
    // The narrowest the table gets, the columns that can go gone (room for the scroll
    // bar included): the page keeps its window, or its pane, at least this wide.
    readonly property real minimumWidth: style.narrowestWidth + verticalBar.implicitWidth
    // The narrowest the table shows every column in; narrower, columns go.
    readonly property real everyColumnWidth: style.minimumWidth + verticalBar.implicitWidth
    // The columns the person hid, and those gone for lack of room.
    readonly property list<string> hiddenColumns: style.hiddenColumns
    readonly property list<string> autoHiddenColumns: style.autoHiddenColumns

    signal selected(int procId)
    signal streamRequested(int procId)
    signal termRequested(int procId)
    signal killRequested(int procId)
    signal dismissRequested(int procId)
    signal restartRequested(int procId)

    // A status text: where it starts in its cell, and its font (the Status column
    // is as wide as the widest status in this font).
    readonly property int statusIndent: 15
    readonly property font statusFont: Qt.font({ family: Theme.uiFamily, pixelSize: Theme.fontSize })

    ProcTableStyle {
        id: style
        columnNames: table.procModel.columnNames
        // While the rows overflow, the scroll bar covers the right edge (when it shows):
        // the columns stay left of it. (Rows are all one height: their count says it
        // without waiting for the layout, which these widths feed.)
        viewWidth: view.width - (table.procModel.count * Theme.rowHeight > view.height ? verticalBar.width : 0)
        actionsWidth: table.showActions ? 5 * Theme.buttonSize + 4 * 2 + Theme.spacing * 2 + 4 : 0
        statusFontFamily: table.statusFont.family
        statusFontSize: table.statusFont.pixelSize
        statusPadding: table.statusIndent + Theme.spacing * 2 + 4
        settingsKey: table.settingsKey
        onColumnWidthsChanged: view.forceLayout()
    }

    // The sort a person left a table of this kind in.
    Component.onCompleted: style.restoreSort(table.procModel)

    // The rows keep their order while the pointer is over them or presses one.
    Binding {
        target: table.procModel
        property: "orderHeld"
        value: rowsHover.hovered || rowsPress.active
    }

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
            readonly property string key: style.columnNames[column] ?? ""
            readonly property bool sorted: key.length > 0 && key === table.procModel.sortColumn
            readonly property bool alignRight: style.alignRight(key)

            objectName: "header-" + key
            implicitHeight: 28
            // A column that went (0 px wide) can leave its title loaded, drawn over the
            // next one's: the header relays out its columns only as far as their widths.
            visible: (style.columnWidths[column] ?? 0) > 0
            // Each title over the next: a column's resize handle reaches past its edge.
            z: 1000 - column
            color: headerHover.hovered && key !== "actions" ? Theme.hover : Theme.header

            HoverHandler { id: headerHover }
            TapHandler {
                acceptedButtons: Qt.LeftButton
                onTapped: style.cycleSort(table.procModel, headerCell.key)
            }
            TapHandler {
                acceptedButtons: Qt.RightButton
                onTapped: eventPoint => columnMenu.popup(headerCell, eventPoint.position.x, eventPoint.position.y)
            }
            // A title too long for its column elides; the whole of it shows on hover.
            ToolTip.visible: headerHover.hovered && headerText.truncated
            ToolTip.delay: 500
            ToolTip.text: headerCell.display

            // The sort arrow never cuts the title: a number column's goes to the left of
            // its title (which stays over the numbers), another's may reach into the
            // right margin.
            Item {
                id: headerRoom
                anchors.fill: parent
                anchors.leftMargin: headerCell.key === "actions" ? Theme.spacing + 2
                                  : headerCell.alignRight ? 2 : Theme.spacing + 4
                anchors.rightMargin: headerCell.alignRight ? Theme.spacing : 4

                Row {
                    x: headerCell.alignRight ? parent.width - width : 0
                    height: parent.height
                    spacing: 3
                    layoutDirection: headerCell.alignRight ? Qt.RightToLeft : Qt.LeftToRight
                    Text {
                        id: headerText
                        objectName: "headerText-" + headerCell.key
                        height: parent.height
                        width: Math.min(implicitWidth, headerRoom.width - (sortArrow.visible ? sortArrow.width + 3 : 0))
                        verticalAlignment: Text.AlignVCenter
                        text: headerCell.display
                        color: headerCell.sorted ? Theme.text : Theme.textDim
                        font.pixelSize: Theme.smallFontSize
                        font.weight: Font.DemiBold
                        font.capitalization: Font.AllUppercase
                        font.letterSpacing: 0.6
                        elide: Text.ElideRight
                    }
                    // The sort indicator: dimmed while changed values wait to reorder the rows.
                    Text {
                        id: sortArrow
                        objectName: "sortIndicator-" + headerCell.key
                        visible: headerCell.sorted
                        height: parent.height
                        verticalAlignment: Text.AlignVCenter
                        text: table.procModel.sortDescending ? "▼" : "▲"
                        color: Theme.accent
                        opacity: table.procModel.reorderPending ? 0.45 : 1.0
                        font.pixelSize: Theme.smallFontSize - 2
                    }
                }
            }
            Rectangle {
                anchors.bottom: parent.bottom
                width: parent.width
                height: 1
                color: Theme.border
            }
            // The column's right edge: drag to resize, double-click for the automatic width.
            // It straddles the edge, 6 px each side: a near miss resizes rather than sorts.
            MouseArea {
                id: resizeHandle
                objectName: "resizeHandle-" + headerCell.key
                visible: style.resizable(headerCell.key) && headerCell.width > 0
                anchors.right: parent.right
                anchors.rightMargin: -6
                width: 12
                height: parent.height
                cursorShape: Qt.SplitHCursor
                preventStealing: true
                hoverEnabled: true
                onPressed: mouse => style.beginResize(headerCell.column, resizeHandle.mapToItem(table, mouse.x, 0).x)
                onPositionChanged: mouse => style.resizeTo(resizeHandle.mapToItem(table, mouse.x, 0).x)
                onReleased: style.endResize()
                onCanceled: style.endResize()
                onDoubleClicked: style.resetColumn(headerCell.column)

                Rectangle {
                    anchors.horizontalCenter: parent.horizontalCenter
                    anchors.verticalCenter: parent.verticalCenter
                    width: resizeHandle.containsMouse || resizeHandle.pressed ? 2 : 1
                    height: resizeHandle.containsMouse || resizeHandle.pressed ? parent.height : parent.height - 12
                    color: resizeHandle.containsMouse || resizeHandle.pressed ? Theme.accent : Theme.border
                }
            }
        }
    }

    // The column chooser: a box per column, ticked while the person shows it (one
    // ticked but without room says so); the command and the actions always show.
    Menu {
        id: columnMenu
        objectName: "columnMenu"
        padding: 4
        background: Rectangle {
            implicitWidth: 200
            color: Theme.raised
            radius: 6
            border.color: Theme.borderStrong
        }

        Instantiator {
            model: style.columnNames.filter(name => name !== "actions")
            delegate: MenuEntry {
                id: columnEntry
                required property string modelData
                readonly property bool shownByPerson: style.hiddenColumns.indexOf(modelData) < 0
                objectName: "columnMenuItem-" + modelData
                text: style.columnTitle(modelData)
                shortcutText: style.autoHiddenColumns.indexOf(modelData) >= 0 ? qsTr("no room") : ""
                // A box the style ticks (a checkable item would tick it itself, unbound).
                checkBox: true
                checked: shownByPerson
                enabled: style.hideable(modelData)
                onTriggered: style.setColumnShown(modelData, !shownByPerson)
            }
            onObjectAdded: (index, object) => columnMenu.insertItem(index, object as MenuItem)
            onObjectRemoved: (index, object) => columnMenu.removeItem(object as MenuItem)
        }
        MenuSeparator {
            contentItem: Rectangle {
                implicitHeight: 1
                color: Theme.border
            }
        }
        MenuEntry {
            objectName: "showAllColumnsMenuItem"
            text: qsTr("Show all columns")
            enabled: style.hiddenColumns.length > 0
            onTriggered: style.showAllColumns()
        }
        MenuEntry {
            objectName: "automaticWidthsMenuItem"
            text: qsTr("Automatic widths")
            onTriggered: style.resetColumns()
        }
    }

    // What every cell of a row has: the row's highlight, the pointer, a divider.
    component Cell: Rectangle {
        id: cell

        required property int row
        required property int procId
        required property string columnName
        default property alias content: inner.data
        readonly property bool isStreaming: procId === table.streamingProcId

        objectName: columnName + "Cell-" + procId
        implicitHeight: Theme.rowHeight
        color: procId === table.currentProcId ? (table.activeFocus || Window.active ? Theme.selection : Theme.selectionInactive)
             : view.hoveredRow === row ? Theme.hover
             : "transparent"

        HoverHandler {
            onHoveredChanged: view.hoveredRow = hovered ? cell.row : view.hoveredRow === cell.row ? -1 : view.hoveredRow
        }
        TapHandler {
            acceptedButtons: Qt.LeftButton
            onTapped: table.selected(cell.procId)
            onDoubleTapped: table.streamRequested(cell.procId)
        }
        Item {
            id: inner
            anchors.fill: parent
            anchors.leftMargin: Theme.spacing + 4
            anchors.rightMargin: Theme.spacing
        }
        Rectangle {
            anchors.bottom: parent.bottom
            width: parent.width
            height: 1
            color: Theme.divider
        }
    }

    // CPU or memory: a sparkline of the last minute across the whole cell, as tall
    // as the row allows and faint, under the latest value, which sits on the
    // row's text line like every other cell's. Greyed (and "–") once the proc
    // exited, its sparkline kept. The sparkline reads the row's samples from the
    // model whenever `samples` changes.
    component StatsCell: Cell {
        id: statsCell
        required property bool statsLive
        required property int samples
        property string valueText
        property color lineColor: Theme.accent

        Sparkline {
            objectName: statsCell.columnName + "Sparkline-" + statsCell.procId
            anchors.fill: parent
            anchors.topMargin: 5
            anchors.bottomMargin: 5
            source: table.procModel
            procId: statsCell.procId
            series: statsCell.columnName
            revision: statsCell.samples
            color: statsCell.statsLive ? statsCell.lineColor : Theme.textFaint
            opacity: statsCell.statsLive ? 0.6 : 0.35
            // A lone sample draws a dot only while the proc runs (its first one).
            lonePoints: statsCell.statsLive
            // The line alone: a fill below it doubles the cost of a paint
            // (benchmarks/bench_sampler.py draw).
            fillOpacity: 0
        }
        Text {
            objectName: statsCell.columnName + "Text-" + statsCell.procId
            anchors.fill: parent
            text: statsCell.valueText
            color: statsCell.statsLive ? Theme.text : Theme.textFaint
            font.family: Theme.monoFamily
            font.pixelSize: Theme.monoFontSize - 1
            horizontalAlignment: Text.AlignRight
            verticalAlignment: Text.AlignVCenter
            elide: Text.ElideLeft
        }
    }

    component TextCell: Cell {
        id: textCell
        required property string display
        property bool mono: false
        property color textColor: Theme.textDim
        property int alignment: Text.AlignLeft

        Text {
            anchors.fill: parent
            text: textCell.display
            color: textCell.textColor
            font.family: textCell.mono ? Theme.monoFamily : Theme.uiFamily
            font.pixelSize: textCell.mono ? Theme.monoFontSize : Theme.fontSize
            horizontalAlignment: textCell.alignment
            verticalAlignment: Text.AlignVCenter
            elide: Text.ElideRight
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
        columnWidthProvider: column => style.columnWidths[column] ?? 0
        // Rows are few and change state in place: fresh delegates keep no stale state.
        // (A sort's reorder is a layoutChanged, which refreshes only fresh delegates.)
        reuseItems: false
        property int hoveredRow: -1

        HoverHandler { id: rowsHover }
        PointHandler { id: rowsPress }

        // The model refreshes runtimes, and samples CPU and memory, only for the rows on screen.
        function reportVisibleRows() { table.procModel.setVisibleRows(topRow, bottomRow) }
        onTopRowChanged: Qt.callLater(reportVisibleRows)
        onBottomRowChanged: Qt.callLater(reportVisibleRows)

        ScrollBar.vertical: ScrollBar {
            id: verticalBar
            objectName: "procTableScrollBar"
            policy: ScrollBar.AsNeeded
        }
        // Only narrower than its minimumWidth (a host's layout can do that) does the
        // table scroll sideways; the columns never hide behind the edge unreachable.
        ScrollBar.horizontal: ScrollBar { policy: ScrollBar.AsNeeded }

        delegate: DelegateChooser {
            role: "columnName"

            DelegateChoice {
                roleValue: "id"
                TextCell {
                    id: idCell
                    mono: true
                    textColor: Theme.text
                    // The streaming row carries an accent bar on its left edge.
                    Rectangle {
                        visible: idCell.isStreaming
                        x: -Theme.spacing - 4
                        width: 2
                        height: parent.height
                        color: Theme.accent
                    }
                }
            }
            DelegateChoice {
                roleValue: "pid"
                TextCell { mono: true }
            }
            DelegateChoice {
                roleValue: "agent"
                TextCell {}
            }
            DelegateChoice {
                roleValue: "runtime"
                TextCell {
                    mono: true
                    alignment: Text.AlignRight
                }
            }
            DelegateChoice {
                roleValue: "cpu"
                StatsCell {
                    required property string cpuText
                    valueText: cpuText
                    lineColor: Qt.lighter(Theme.accent, 1.35)
                }
            }
            DelegateChoice {
                roleValue: "memory"
                StatsCell {
                    required property string memoryText
                    valueText: memoryText
                    lineColor: Theme.success
                }
            }
            DelegateChoice {
                roleValue: "tool"
                Cell {
                    id: toolCell
                    // The tool, or the name of the workspace command that ran it.
                    required property string display
                    required property string command
                    required property string commandName
                    // A command's row: how many earlier runs fold behind it, and
                    // whether they show under it; an earlier run shown so.
                    required property int restartCount
                    required property bool runsShown
                    required property bool earlierRun
                    // The command's phase ("ready"), or "run 2" for an earlier run.
                    required property string runText
                    // The whole command line, which the cell elides or names (read by tests).
                    readonly property string toolTipText: command

                    HoverHandler { id: toolHover }
                    ToolTip.visible: toolHover.hovered && !runsButton.hovered && toolCell.command.length > 0
                    ToolTip.delay: 500
                    ToolTip.text: toolCell.toolTipText

                    Row {
                        anchors.fill: parent
                        spacing: Theme.spacing
                        clip: true
                        // An earlier run hangs under its command's row.
                        leftPadding: toolCell.earlierRun ? 6 : 0
                        Text {
                            visible: toolCell.earlierRun
                            height: parent.height
                            text: "↳"
                            color: Theme.textFaint
                            font.pixelSize: Theme.fontSize
                            verticalAlignment: Text.AlignVCenter
                        }
                        // "▸ ↻ 3": the command restarted; a click shows its earlier runs.
                        AbstractButton {
                            id: runsButton
                            objectName: "runsButton-" + toolCell.procId
                            readonly property string runs: toolCell.restartCount === 1
                                ? qsTr("1 earlier run") : qsTr("%1 earlier runs").arg(toolCell.restartCount)
                            readonly property string toolTipText: toolCell.runsShown
                                ? qsTr("Hide the %1").arg(runs)
                                : qsTr("Restarted: show the %1 under this one").arg(runs)
                            visible: toolCell.restartCount > 0
                            anchors.verticalCenter: parent.verticalCenter
                            focusPolicy: Qt.NoFocus
                            hoverEnabled: true
                            padding: 0
                            leftPadding: 5
                            rightPadding: 6
                            implicitHeight: 20
                            implicitWidth: leftPadding + rightPadding + runsText.implicitWidth
                            text: toolTipText
                            Accessible.name: toolTipText
                            ToolTip.visible: hovered
                            ToolTip.delay: 500
                            ToolTip.text: toolTipText
                            onClicked: table.procModel.toggleRuns(toolCell.procId)

                            contentItem: Text {
                                id: runsText
                                objectName: "runsText-" + toolCell.procId
                                text: (toolCell.runsShown ? "▾" : "▸") + " ↻ " + toolCell.restartCount
                                color: toolCell.runsShown || runsButton.hovered ? Theme.text : Theme.warning
                                font.family: Theme.monoFamily
                                font.pixelSize: Theme.smallFontSize
                                horizontalAlignment: Text.AlignHCenter
                                verticalAlignment: Text.AlignVCenter
                            }
                            background: Rectangle {
                                radius: 3
                                color: runsButton.down ? Theme.pressed
                                     : runsButton.hovered ? Theme.hover
                                     : toolCell.runsShown ? Theme.accentSoft
                                     : Theme.raised
                                border.width: 1
                                border.color: toolCell.runsShown ? Theme.accent : Theme.border
                            }
                        }
                        Text {
                            id: toolName
                            objectName: "toolName-" + toolCell.procId
                            // A long name gives way (elided), never the restart count before it.
                            width: Math.min(implicitWidth, Math.max(0, parent.width - x))
                            height: parent.height
                            elide: Text.ElideRight
                            text: toolCell.display
                            color: toolCell.earlierRun ? Theme.textDim : Theme.text
                            font.pixelSize: Theme.fontSize
                            font.weight: toolCell.commandName.length > 0 && !toolCell.earlierRun ? Font.DemiBold : Font.Normal
                            verticalAlignment: Text.AlignVCenter
                        }
                        Text {
                            objectName: "toolDetail-" + toolCell.procId
                            height: parent.height
                            width: Math.max(0, parent.width - x)
                            text: toolCell.commandName.length > 0 ? toolCell.runText : toolCell.command
                            color: Theme.textFaint
                            font.family: Theme.monoFamily
                            font.pixelSize: Theme.monoFontSize
                            verticalAlignment: Text.AlignVCenter
                            elide: Text.ElideRight
                        }
                    }
                }
            }
            DelegateChoice {
                roleValue: "status"
                Cell {
                    id: statusCell
                    // The state, or a restart's countdown; in its colour lifted for
                    // the dark theme; how it exited and what its workspace does with it.
                    required property string statusLabel
                    required property color statusTint
                    required property string statusTip

                    Item {
                        anchors.fill: parent
                        HoverHandler { id: statusHover }
                        ToolTip.visible: statusHover.hovered && statusCell.statusTip.length > 0
                        ToolTip.delay: 500
                        ToolTip.text: statusCell.statusTip

                        Rectangle {
                            anchors.verticalCenter: parent.verticalCenter
                            width: 8
                            height: 8
                            radius: 4
                            color: statusCell.statusTint
                        }
                        Text {
                            objectName: "statusText-" + statusCell.procId
                            x: table.statusIndent
                            width: parent.width - x
                            height: parent.height
                            text: statusCell.statusLabel
                            color: statusCell.statusTint
                            font: table.statusFont
                            verticalAlignment: Text.AlignVCenter
                            elide: Text.ElideRight
                        }
                    }
                }
            }
            DelegateChoice {
                roleValue: "actions"
                Cell {
                    id: actionsCell
                    required property bool canTerm
                    required property bool canKill
                    required property bool canDismiss
                    required property bool canRestart

                    Row {
                        anchors.verticalCenter: parent.verticalCenter
                        spacing: 2
                        IconButton {
                            objectName: "streamButton-" + actionsCell.procId
                            iconName: "stream"
                            tip: actionsCell.isStreaming ? qsTr("Streaming") : qsTr("Stream output")
                            shortcutText: table.streamShortcut
                            iconColor: actionsCell.isStreaming ? Theme.accent : Theme.textDim
                            onClicked: table.streamRequested(actionsCell.procId)
                        }
                        IconButton {
                            objectName: "termButton-" + actionsCell.procId
                            iconName: "term"
                            tip: qsTr("Terminate (SIGTERM, then SIGKILL)")
                            shortcutText: table.termShortcut
                            enabled: actionsCell.canTerm
                            destructive: true
                            onClicked: table.termRequested(actionsCell.procId)
                        }
                        IconButton {
                            objectName: "killButton-" + actionsCell.procId
                            iconName: "kill"
                            tip: qsTr("Kill (SIGKILL)")
                            shortcutText: table.killShortcut
                            enabled: actionsCell.canKill
                            destructive: true
                            onClicked: table.killRequested(actionsCell.procId)
                        }
                        IconButton {
                            objectName: "restartButton-" + actionsCell.procId
                            iconName: "restart"
                            tip: qsTr("Restart: run the command again, in this row")
                            shortcutText: table.restartShortcut
                            enabled: actionsCell.canRestart
                            onClicked: table.restartRequested(actionsCell.procId)
                        }
                        IconButton {
                            objectName: "dismissButton-" + actionsCell.procId
                            iconName: "dismiss"
                            tip: qsTr("Dismiss: hide from this list; its output stays in the history")
                            shortcutText: table.dismissShortcut
                            enabled: actionsCell.canDismiss
                            onClicked: table.dismissRequested(actionsCell.procId)
                        }
                    }
                }
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
