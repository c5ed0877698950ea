pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Procwindow

// The live output of one process: a ListView over an OutputModel (never a text
// area: it stays cheap at a million lines). It follows the tail until the person
// scrolls up, and follows again once they are back at the bottom: the view tells
// its ProcWindowModel what happened, the model decides. A process on a terminal
// shows its screen instead (a TerminalView, keys typed there go to it), its lines
// one click away (the Terminal chip).
FocusScope {
    id: pane

    required property ProcWindowModel viewModel
    readonly property OutputModel outputModel: viewModel.outputModel
    readonly property StatsSampler stats: viewModel.stats
    readonly property OutputFind find: viewModel.find
    readonly property InputLine inputLine: viewModel.inputLine
    readonly property TerminalModel terminal: viewModel.pane.terminal
    // The terminal's screen shows, not the lines.
    readonly property bool terminalShown: terminal.active
    // Below 800 px the header's row is short of room: its gauges drop their bars and
    // the filter field keeps to its narrowest, so that the header reads whole and the
    // buttons at the end of the row stay in the pane.
    readonly property bool narrow: width < 800
    // Shortcut texts for the tooltips (the window owns the shortcuts).
    property string filterShortcut: "Ctrl+F"
    property string copyShortcut: "Ctrl+C"
    property string copyAllShortcut: "Ctrl+Shift+C"
    property string liveShortcut: "End"

    readonly property bool following: viewModel.following
    // The filter field has the keyboard (Esc there may hand it back to the table).
    readonly property bool filterFocused: filterField.activeFocus
    // The stdin line has the keyboard.
    readonly property bool inputFocused: inputField.activeFocus
    readonly property int lineCount: view.count
    // Read once here, not by every line: a line is made in a few microseconds.
    readonly property int selectionStart: viewModel.selectionStart
    readonly property int selectionEnd: viewModel.selectionEnd
    // A filter is in effect: lines mark its matches, which only rich text draws.
    readonly property bool marking: outputModel.marking
    readonly property int currentMatch: outputModel.currentMatch

    // The End key: back to the live tail (a scroll still gliding is stopped first).
    function jumpToLive() { view.cancelFlick(); view.centredRow = -1; pane.viewModel.jumpToLive(view.moving) }
    // The filter filters lines: from the terminal view, back to them.
    function focusFilter() { pane.terminal.shown = false; filterField.forceActiveFocus(); filterField.selectAll() }
    function focusTerminal() { if (pane.terminalShown) terminalView.forceActiveFocus() }
    function focusInput() { if (inputField.visible) inputField.forceActiveFocus() }
    // Put row `row` in the middle of the view (a search hit opened at its line).
    // It stays in the middle while the view is laid out, until the person scrolls.
    function showRow(row: int) { view.cancelFlick(); view.centredRow = row; view.centre() }
    // The person took the view to its top: the lines before it come back from the log, a
    // chunk at a time, above the rows (the view stays on its lines); End lets them go.
    function loadEarlier() { if (!pane.following && !pane.terminalShown) pane.outputModel.loadEarlier() }

    Connections {
        target: pane.outputModel
        // The oldest lines went and the rows shifted up: a view that does not follow stays on its lines.
        function onShifted(rows: int) { view.centredRow = -1; pane.viewModel.outputShifted(rows, view.contentY - view.originY, Theme.lineHeight) }
        function onModelReset() { view.centredRow = -1; pane.viewModel.outputReset() }
        // Lines read back from the log came in above the rows: a view that does not follow
        // stays on its lines (a ListView at its top would show the new ones), however it
        // was moving. Where it was is measured before the rows come.
        function onRowsAboutToBeInserted(parent: var, first: int, last: int) { view.aboveTop = view.contentY - view.originY }
        function onEarlierLoaded(rows: int) { if (rows > 0 && !pane.following) view.cancelFlick(); pane.viewModel.pane.outputPrepended(rows, view.aboveTop, Theme.lineHeight) }
    }
    Connections {
        target: pane.find
        function onRevealRow(row: int) { pane.showRow(row) }
    }
    // The model draws the marks and times in the theme's colours.
    Binding { target: pane.outputModel; property: "matchColor"; value: Theme.match }
    Binding { target: pane.outputModel; property: "currentMatchColor"; value: Theme.matchCurrent }
    Binding { target: pane.outputModel; property: "timeColor"; value: Theme.timestamp }
    Connections {
        target: pane.viewModel
        function onPositionAtEnd() { view.positionViewAtEnd() }
        function onPositionAt(y: real) { view.contentY = view.originY + y }
        function onLinesReplaced() { view.maxLineWidth = 0 }
    }

    // Paging and Home, while the lines have the keyboard.
    Shortcut {
        sequence: "PgUp"
        enabled: view.activeFocus
        onActivated: { view.contentY = Math.max(view.originY, Math.min(view.contentY - view.pageStep, view.lastContentY)); pane.viewModel.following = view.nearEnd; if (view.atYBeginning) pane.loadEarlier() }
    }
    Shortcut {
        sequence: "PgDown"
        enabled: view.activeFocus
        onActivated: { view.contentY = Math.max(view.originY, Math.min(view.contentY + view.pageStep, view.lastContentY)); pane.viewModel.following = view.nearEnd }
    }
    Shortcut {
        sequence: "Home"
        enabled: view.activeFocus
        onActivated: { pane.viewModel.following = false; view.positionViewAtBeginning(); pane.loadEarlier() }
    }
    // From match to match, wherever the keyboard is (Enter and Shift+Enter in the filter field).
    Shortcut {
        sequence: "F3"
        enabled: pane.marking
        onActivated: pane.find.next()
    }
    Shortcut {
        sequence: "Shift+F3"
        enabled: pane.marking
        onActivated: pane.find.previous()
    }
    // End of input, as in a terminal: only while the stdin line has the keyboard.
    Shortcut {
        sequence: "Ctrl+D"
        enabled: pane.inputFocused
        onActivated: pane.inputLine.closeStdin()
    }

    ColumnLayout {
        anchors.fill: parent
        spacing: 0

        // -- header: title, gauges, filter, copy, clear -----------------------------
        Rectangle {
            Layout.fillWidth: true
            Layout.preferredHeight: Theme.barHeight
            color: Theme.header

            RowLayout {
                anchors.fill: parent
                anchors.leftMargin: Theme.spacing + 4
                anchors.rightMargin: Theme.spacing
                spacing: Theme.spacing

                Text {
                    id: outputHeader
                    objectName: "outputHeader"
                    text: pane.outputModel.header
                    color: Theme.text
                    font.pixelSize: Theme.fontSize
                    font.weight: Font.DemiBold
                    elide: Text.ElideRight
                    // In a narrow window it gives way (elided, whole on hover) before the
                    // buttons at the end of the row leave the pane.
                    Layout.fillWidth: true
                    Layout.maximumWidth: 200
                    HoverHandler { id: outputHeaderHover }
                    ToolTip.visible: outputHeaderHover.hovered && outputHeader.truncated
                    ToolTip.delay: 500
                    ToolTip.text: outputHeader.text
                }
                Gauge {
                    objectName: "cpuGauge"
                    visible: pane.outputModel.procId >= 0
                    compact: pane.narrow
                    enabled: pane.stats.active
                    label: qsTr("CPU")
                    value: pane.viewModel.cpuLoad
                    valueText: pane.viewModel.cpuText
                    Layout.leftMargin: Theme.spacing
                }
                Gauge {
                    objectName: "memGauge"
                    visible: pane.outputModel.procId >= 0
                    compact: pane.narrow
                    enabled: pane.stats.active
                    label: qsTr("Mem")
                    value: pane.viewModel.memoryLoad
                    valueText: pane.viewModel.memoryText
                    barColor: Theme.success
                }
                Item { Layout.fillWidth: true }

                FilterField {
                    id: filterField
                    objectName: "filterField"
                    visible: !pane.terminalShown
                    outputModel: pane.outputModel
                    matchText: pane.viewModel.matchText
                    shortcutText: pane.filterShortcut
                    // It gives way (to 150 px) before the buttons beside it leave the pane.
                    Layout.fillWidth: true
                    Layout.minimumWidth: 150
                    Layout.preferredWidth: pane.narrow ? 150 : Math.min(320, Math.max(180, pane.width * 0.3))
                    Layout.maximumWidth: Layout.preferredWidth
                    onNextRequested: pane.find.next()
                    onPreviousRequested: pane.find.previous()
                }
                ToggleChip {
                    objectName: "terminalToggle"
                    visible: pane.terminal.available
                    label: qsTr("Terminal")
                    tip: pane.terminal.shown ? qsTr("The terminal's screen shows: click for its lines") : qsTr("Its lines show: click for the terminal's screen")
                    implicitWidth: 66
                    implicitHeight: Theme.buttonSize - 4
                    checked: pane.terminal.shown
                    onToggled: pane.terminal.shown = checked
                }
                ToggleChip {
                    objectName: "timesToggle"
                    visible: !pane.terminalShown
                    label: "12:00"
                    tip: qsTr("Show the time each line arrived")
                    implicitWidth: 40
                    implicitHeight: Theme.buttonSize - 4
                    checked: pane.outputModel.showTimes
                    onToggled: pane.outputModel.showTimes = checked
                }
                IconButton {
                    objectName: "copyButton"
                    iconName: "copy"
                    tip: pane.viewModel.copyTip
                    shortcutText: pane.viewModel.hasSelection ? pane.copyShortcut : pane.copyAllShortcut
                    enabled: pane.terminalShown || view.count > 0
                    onClicked: pane.viewModel.copy()
                }
                IconButton {
                    objectName: "clearButton"
                    visible: !pane.terminalShown
                    iconName: "clear"
                    tip: qsTr("Clear the view (the log is kept)")
                    enabled: view.count > 0
                    onClicked: pane.outputModel.clear()
                }
            }
            Rectangle {
                anchors.bottom: parent.bottom
                width: parent.width
                height: 1
                color: Theme.border
            }
        }

        // -- what the pane no longer holds, and the log that keeps it --------------------
        Rectangle {
            objectName: "earlierNotice"
            visible: pane.viewModel.earlierText.length > 0
            Layout.fillWidth: true
            Layout.preferredHeight: Theme.buttonSize + 4
            color: Theme.surface

            RowLayout {
                anchors.fill: parent
                anchors.leftMargin: Theme.spacing + 4
                anchors.rightMargin: Theme.spacing
                spacing: Theme.smallSpacing

                Text {
                    objectName: "earlierText"
                    text: pane.viewModel.earlierText
                    color: Theme.textDim
                    font.pixelSize: Theme.smallFontSize + 1
                    elide: Text.ElideRight
                    // The words first: the path gives way before they do.
                    Layout.preferredWidth: implicitWidth
                    Layout.minimumWidth: Math.min(implicitWidth, 160)
                }
                Text {
                    id: logText
                    objectName: "logText"
                    text: pane.viewModel.logText
                    color: Theme.text
                    font.family: Theme.monoFamily
                    font.pixelSize: Theme.smallFontSize
                    // A long path loses its middle; hovering shows all of it.
                    elide: Text.ElideMiddle
                    Layout.fillWidth: true
                    Layout.preferredWidth: Math.min(implicitWidth, 120)
                    Layout.minimumWidth: Math.min(implicitWidth, 60)
                    HoverHandler { id: logHover }
                    ToolTip.visible: logHover.hovered && logText.truncated
                    ToolTip.delay: 600
                    ToolTip.text: logText.text
                }
                ToolbarButton {
                    objectName: "loadEarlierButton"
                    visible: pane.viewModel.pane.loadEarlierText.length > 0 && !pane.terminalShown
                    implicitHeight: Theme.buttonSize
                    text: pane.viewModel.pane.loadEarlierText
                    tip: qsTr("Read the lines before the first shown back from the log, above it (as scrolling to the top does)")
                    font.pixelSize: Theme.smallFontSize + 1
                    onClicked: { pane.viewModel.following = false; view.positionViewAtBeginning(); pane.loadEarlier() }
                }
                ToolbarButton {
                    objectName: "openLogButton"
                    visible: pane.viewModel.logPath.length > 0
                    implicitHeight: Theme.buttonSize
                    text: qsTr("Open log")
                    tip: pane.viewModel.openLogTip
                    font.pixelSize: Theme.smallFontSize + 1
                    onClicked: pane.viewModel.openLog()
                }
                ToolbarButton {
                    objectName: "copyLogPathButton"
                    visible: pane.viewModel.logPath.length > 0
                    implicitHeight: Theme.buttonSize
                    text: qsTr("Copy path")
                    tip: qsTr("Copy the path of the log")
                    font.pixelSize: Theme.smallFontSize + 1
                    onClicked: pane.viewModel.copyLogPath()
                }
            }
            Rectangle {
                anchors.bottom: parent.bottom
                width: parent.width
                height: 1
                color: Theme.border
            }
        }

        // -- the lines ---------------------------------------------------------------
        Rectangle {
            Layout.fillWidth: true
            Layout.fillHeight: true
            color: Theme.outputBackground
            clip: true

            ListView {
                id: view
                objectName: "outputView"

                readonly property bool following: pane.viewModel.following
                // The widest line seen, for horizontal scrolling (no wrapping).
                property real maxLineWidth: 0
                readonly property real pageStep: height - 2 * Theme.lineHeight
                readonly property real lastContentY: originY + contentHeight - height
                // At the end, give or take four lines: while lines pour in, the end
                // moves on during a scroll, and "back at the bottom" must still count.
                readonly property bool nearEnd: lastContentY - contentY <= 4 * Theme.lineHeight
                // The row showRow put in the middle (-1: none, or the person scrolled since).
                property int centredRow: -1
                // Where the view was, below its first row, before rows came in above it.
                property real aboveTop: 0
                function centre() { if (centredRow >= 0 && centredRow < count) positionViewAtIndex(centredRow, ListView.Center) }

                anchors.fill: parent
                anchors.topMargin: 4
                anchors.bottomMargin: 2
                visible: !pane.terminalShown
                // Under the terminal view it makes no rows (a full-screen program's
                // redraws are many lines); back on the lines, it opens at their tail.
                model: pane.terminalShown ? null : pane.outputModel
                focus: true
                activeFocusOnTab: true
                clip: true
                reuseItems: true
                boundsBehavior: Flickable.StopAtBounds
                // Desktop behaviour: the wheel and the scroll bars scroll; dragging selects.
                acceptedButtons: Qt.NoButton
                flickableDirection: Flickable.AutoFlickIfNeeded
                contentWidth: Math.max(width, maxLineWidth + 2 * Theme.spacing + 8)

                onCountChanged: pane.viewModel.followTail()
                onHeightChanged: { pane.viewModel.followTail(); centre() }
                // The person scrolls: stop following; back at the end: follow again.
                onMovementStarted: { centredRow = -1; pane.viewModel.scrollStarted() }
                onMovementEnded: pane.viewModel.scrollEnded(nearEnd)
                onAtYEndChanged: pane.viewModel.scrolledToEnd(atYEnd, moving || vbar.pressed)
                // Scrolled (wheel, flick, scroll bar) to the top: the lines before it (not a reset's top).
                onAtYBeginningChanged: if (atYBeginning && (moving || vbar.pressed)) Qt.callLater(pane.loadEarlier)

                ScrollBar.vertical: ScrollBar {
                    id: vbar
                    objectName: "outputScrollBar"
                    // Always there once the lines overflow: where the view is in them, at a glance.
                    policy: view.height > 4 * Theme.lineHeight && view.contentHeight > view.height ? ScrollBar.AlwaysOn : ScrollBar.AsNeeded
                    // A handle that can be seen and caught over 100,000 lines: at least 24 px.
                    minimumSize: Math.min(1, 24 / Math.max(1, height))
                    onPressedChanged: pane.viewModel.scrollBarPressed(pressed, view.nearEnd)
                }
                ScrollBar.horizontal: ScrollBar { policy: ScrollBar.AsNeeded }

                // The line the process has begun and not ended (a prompt, a progress
                // bar's latest state), after the rows whatever the filter: a bar and
                // a caret say it is unfinished. It becomes a row once it ends.
                footer: Rectangle {
                    id: partialLine
                    objectName: "partialLine"
                    readonly property bool shown: pane.outputModel.partialText.length > 0
                    width: view.contentWidth
                    height: shown ? Theme.lineHeight : 0
                    visible: shown
                    color: pane.outputModel.partialIsStderr ? Theme.stderrBackground : "transparent"

                    Rectangle {
                        width: 2
                        height: parent.height
                        color: Theme.accent
                    }
                    Text {
                        id: partialText
                        objectName: "partialText"
                        x: Theme.spacing + 4
                        height: parent.height
                        verticalAlignment: Text.AlignVCenter
                        text: pane.outputModel.partialStyled
                        textFormat: pane.marking ? Text.RichText : Text.StyledText
                        color: pane.outputModel.partialIsStderr ? Theme.stderrText : Theme.outputText
                        font.family: Theme.monoFamily
                        font.pixelSize: Theme.monoFontSize
                        font.kerning: false
                        font.preferShaping: false
                        wrapMode: Text.NoWrap
                        onImplicitWidthChanged: view.maxLineWidth = Math.max(view.maxLineWidth, implicitWidth + 12)
                    }
                    Rectangle {
                        objectName: "partialCaret"
                        x: partialText.x + partialText.implicitWidth + 2
                        anchors.verticalCenter: parent.verticalCenter
                        width: 7
                        height: Theme.monoFontSize + 2
                        color: Theme.accent
                        opacity: 0.7
                    }
                }

                delegate: Rectangle {
                    id: line

                    required property int index
                    required property string shown
                    required property int shownFormat
                    required property bool isStderr

                    readonly property bool isSelected: index >= pane.selectionStart && index <= pane.selectionEnd
                    // A delegate waiting in the reuse pool answers to no name.
                    property bool pooled: false
                    ListView.onPooled: pooled = true
                    ListView.onReused: pooled = false
                    objectName: pooled ? "" : "line-" + index

                    width: view.contentWidth
                    height: Theme.lineHeight
                    color: isSelected ? Theme.lineSelection
                         : isStderr ? Theme.stderrBackground
                         : "transparent"

                    Rectangle {
                        visible: line.isStderr
                        width: 2
                        height: parent.height
                        color: Theme.stderrMark
                    }
                    // The current match's line: a bar in its colour (its matches are marked in it).
                    Rectangle {
                        objectName: line.index === pane.currentMatch ? "currentMatchMark" : ""
                        visible: line.index === pane.currentMatch
                        width: 3
                        height: parent.height
                        color: Theme.matchCurrentMark
                    }

                    Text {
                        x: Theme.spacing + 4
                        height: parent.height
                        verticalAlignment: Text.AlignVCenter
                        // Plain text unless the line has something to style (the model says).
                        text: line.shown
                        textFormat: line.shownFormat
                        color: line.isStderr ? Theme.stderrText : Theme.outputText
                        font.family: Theme.monoFamily
                        font.pixelSize: Theme.monoFontSize
                        // Monospace output needs no kerning or ligatures: without them a
                        // line is laid out ~25% faster (scripts that need shaping still get it).
                        font.kerning: false
                        font.preferShaping: false
                        wrapMode: Text.NoWrap
                        onImplicitWidthChanged: view.maxLineWidth = Math.max(view.maxLineWidth, implicitWidth)
                    }

                    // Press selects a line, Shift+press extends the selection, dragging extends it.
                    MouseArea {
                        anchors.fill: parent
                        acceptedButtons: Qt.LeftButton
                        onPressed: mouse => { view.forceActiveFocus(); pane.viewModel.pressLine(line.index, (mouse.modifiers & Qt.ShiftModifier) !== 0) }
                        onPositionChanged: mouse => pane.viewModel.dragTo(line.index + Math.floor(mouse.y / line.height))
                    }
                }
            }

            // The terminal's screen, for a process on a terminal: a click gives it the keys.
            TerminalView {
                id: terminalView
                objectName: "terminalView"
                anchors.fill: parent
                anchors.leftMargin: Theme.spacing
                anchors.topMargin: 2
                visible: pane.terminalShown
                terminal: pane.terminal
                padding: 4
                fontFamily: Theme.monoFamily
                fontPixelSize: Theme.monoFontSize
                foreground: Theme.outputText
                background: Theme.outputBackground
                cursorColor: Theme.outputText
                // Hidden under the keyboard's feet: the keys go back to the lines.
                onVisibleChanged: if (!visible && activeFocus) view.forceActiveFocus()
            }

            // What to do when there is nothing to show.
            Text {
                objectName: "outputEmpty"
                anchors.centerIn: parent
                visible: !pane.terminalShown && view.count === 0 && pane.outputModel.partialText.length === 0
                text: pane.viewModel.emptyText
                color: Theme.textFaint
                font.pixelSize: Theme.fontSize
            }

            // Back to the tail, shown while not following.
            Button {
                id: liveButton
                objectName: "jumpToLiveButton"
                visible: !pane.terminalShown && !pane.viewModel.following && view.count > 0
                anchors.right: parent.right
                anchors.bottom: parent.bottom
                anchors.rightMargin: Theme.spacing * 2 + 6
                anchors.bottomMargin: Theme.spacing * 2 + 4
                focusPolicy: Qt.NoFocus
                hoverEnabled: true
                text: qsTr("Jump to live")
                icon.source: Theme.icon("live")
                icon.width: 14
                icon.height: 14
                icon.color: Theme.textOnAccent
                leftPadding: 10
                rightPadding: 12
                topPadding: 5
                bottomPadding: 5
                font.pixelSize: Theme.smallFontSize + 1
                readonly property string toolTipText: qsTr("Follow the output again") + "  ·  " + pane.liveShortcut
                ToolTip.visible: hovered
                ToolTip.delay: 600
                ToolTip.text: toolTipText
                palette.buttonText: Theme.textOnAccent
                background: Rectangle {
                    radius: height / 2
                    color: liveButton.down ? Qt.darker(Theme.accent, 1.2) : liveButton.hovered ? Qt.lighter(Theme.accent, 1.1) : Theme.accent
                }
                onClicked: pane.jumpToLive()
            }
        }

        // -- the stdin line: what is typed here goes to the process ---------------------
        Rectangle {
            objectName: "inputBar"
            // In the terminal view, keys typed there go to the process.
            visible: pane.inputLine.available && !pane.terminalShown
            Layout.fillWidth: true
            Layout.preferredHeight: Theme.buttonSize + 10
            color: Theme.surface
            // Closed under the keyboard's feet: the keys go back to the lines.
            onVisibleChanged: if (!visible && inputField.activeFocus) view.forceActiveFocus()

            Rectangle {
                width: parent.width
                height: 1
                color: Theme.border
            }
            RowLayout {
                anchors.fill: parent
                anchors.leftMargin: Theme.spacing + 4
                anchors.rightMargin: Theme.spacing
                spacing: Theme.spacing

                Text {
                    text: qsTr("stdin")
                    color: Theme.textDim
                    font.family: Theme.monoFamily
                    font.pixelSize: Theme.smallFontSize
                }
                TextField {
                    id: inputField
                    objectName: "inputField"
                    Layout.fillWidth: true
                    implicitHeight: Theme.buttonSize
                    leftPadding: 8
                    rightPadding: 8
                    verticalAlignment: TextInput.AlignVCenter
                    placeholderText: qsTr("A line for the process (Enter sends it, Ctrl+D ends the input)")
                    placeholderTextColor: Theme.textFaint
                    color: Theme.text
                    selectionColor: Theme.accentSoft
                    selectedTextColor: Theme.text
                    font.family: Theme.monoFamily
                    font.pixelSize: Theme.monoFontSize
                    selectByMouse: true
                    // Enter is the window's "stream" shortcut elsewhere; here it sends the line.
                    Keys.onShortcutOverride: event => event.accepted = event.key === Qt.Key_Return || event.key === Qt.Key_Enter
                    onAccepted: { pane.inputLine.send(text); clear() }
                    background: Rectangle {
                        radius: Theme.radius
                        color: Theme.input
                        border.width: 1
                        border.color: inputField.activeFocus ? Theme.focusRing : Theme.border
                    }
                }
                ToolbarButton {
                    objectName: "closeStdinButton"
                    implicitHeight: Theme.buttonSize
                    text: qsTr("End input")
                    tip: qsTr("Close the process's stdin: it reads end of file")
                    shortcutText: "Ctrl+D"
                    font.pixelSize: Theme.smallFontSize + 1
                    onClicked: pane.inputLine.closeStdin()
                }
            }
        }

        // -- footer: line counts and follow state ------------------------------------
        Rectangle {
            Layout.fillWidth: true
            Layout.preferredHeight: 24
            color: Theme.header

            Rectangle {
                width: parent.width
                height: 1
                color: Theme.border
            }
            RowLayout {
                anchors.fill: parent
                anchors.leftMargin: Theme.spacing + 4
                anchors.rightMargin: Theme.spacing + 4
                spacing: Theme.spacing * 2
                Text {
                    objectName: "lineCountText"
                    text: pane.terminalShown ? pane.terminal.statusText : pane.viewModel.lineCountText
                    color: Theme.textFaint
                    font.pixelSize: Theme.smallFontSize
                }
                Text {
                    objectName: "selectedText"
                    visible: pane.viewModel.hasSelection && !pane.terminalShown
                    text: pane.viewModel.selectedText
                    color: Theme.textFaint
                    font.pixelSize: Theme.smallFontSize
                }
                Item { Layout.fillWidth: true }
                Text {
                    objectName: "followState"
                    visible: text.length > 0 && !pane.terminalShown
                    text: pane.viewModel.followText
                    color: pane.viewModel.following ? Theme.success : Theme.warning
                    font.pixelSize: Theme.smallFontSize
                }
            }
        }
    }
}
