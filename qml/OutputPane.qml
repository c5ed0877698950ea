pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

// The live output of one process: a ListView over an OutputModel (never a text
// area: it stays cheap at a million lines). It follows the tail until the person
// scrolls up, and follows again once they are back at the bottom.
FocusScope {
    id: pane

    required property var outputModel
    required property var stats
    // Shortcut texts for the tooltips (the window owns the shortcuts).
    property string filterShortcut: "Ctrl+F"
    property string copyShortcut: "Ctrl+C"
    property string copyAllShortcut: "Ctrl+Shift+C"
    property string liveShortcut: "End"

    readonly property bool following: view.following
    readonly property int lineCount: view.count
    readonly property bool hasSelection: selectionStart >= 0
    // The selected lines, as a range of rows (the anchor and the row the pointer reached).
    property int anchorRow: -1
    property int cursorRow: -1
    readonly property int selectionStart: anchorRow < 0 ? -1 : Math.min(anchorRow, cursorRow)
    readonly property int selectionEnd: anchorRow < 0 ? -1 : Math.max(anchorRow, cursorRow)

    signal copied(string what)

    function jumpToLive() {
        // A scroll still gliding must not end in "not following".
        view.cancelFlick()
        view.jumped = view.moving
        view.following = true
        view.stickToEnd()
    }
    function focusFilter() {
        filterField.forceActiveFocus()
        filterField.selectAll()
    }
    function clearFilter() {
        filterField.clear()
    }
    function clearSelection() {
        anchorRow = -1
        cursorRow = -1
    }
    function selectedRows(): list<int> {
        const rows = []
        for (let r = selectionStart; r >= 0 && r <= selectionEnd; ++r)
            rows.push(r)
        return rows
    }
    function copySelection() {
        if (!hasSelection)
            return false
        outputModel.copyToClipboard(outputModel.copyRows(selectedRows()))
        const n = selectionEnd - selectionStart + 1
        copied(n === 1 ? qsTr("1 line copied") : qsTr("%1 lines copied").arg(n))
        return true
    }
    function copyAll() {
        outputModel.copyToClipboard(outputModel.copyAll())
        copied(outputModel.filterText.length > 0 ? qsTr("Matching lines copied") : qsTr("Output copied"))
    }

    Connections {
        target: pane.outputModel
        function onModelReset() {
            pane.clearSelection()
            view.maxLineWidth = 0
            if (view.following)
                view.stickToEnd()
        }
        function onProcIdChanged() {
            view.following = true
        }
        // At maxLines every append removes as many rows as it inserts: the count
        // stays the same, so onCountChanged alone would stop following there.
        function onRowsInserted() {
            if (view.following)
                Qt.callLater(view.stickToEnd)
        }
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
                    objectName: "outputHeader"
                    text: pane.outputModel.header
                    color: Theme.text
                    font.pixelSize: Theme.fontSize
                    font.weight: Font.DemiBold
                    elide: Text.ElideRight
                    Layout.maximumWidth: 200
                }
                Gauge {
                    objectName: "cpuGauge"
                    visible: pane.outputModel.procId >= 0
                    enabled: pane.stats.active
                    label: qsTr("CPU")
                    value: pane.stats.cpuPercent / 100
                    valueText: pane.stats.active ? pane.stats.cpuPercent.toFixed(0) + "%" : "–"
                    Layout.leftMargin: Theme.spacing
                }
                Gauge {
                    objectName: "memGauge"
                    visible: pane.outputModel.procId >= 0
                    enabled: pane.stats.active
                    label: qsTr("Mem")
                    // Full at 1 GiB: enough to see a child grow.
                    value: pane.stats.rssBytes / 1073741824
                    valueText: pane.stats.active ? pane.stats.rssText : "–"
                    barColor: Theme.success
                }
                Item { Layout.fillWidth: true }

                FilterField {
                    id: filterField
                    objectName: "filterField"
                    outputModel: pane.outputModel
                    shortcutText: pane.filterShortcut
                    Layout.preferredWidth: Math.min(320, Math.max(180, pane.width * 0.3))
                }
                IconButton {
                    objectName: "copyButton"
                    iconName: "copy"
                    tip: pane.hasSelection ? qsTr("Copy selected lines") : qsTr("Copy all lines")
                    shortcutText: pane.hasSelection ? pane.copyShortcut : pane.copyAllShortcut
                    enabled: view.count > 0
                    onClicked: pane.hasSelection ? pane.copySelection() : pane.copyAll()
                }
                IconButton {
                    objectName: "clearButton"
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

        // -- the lines ---------------------------------------------------------------
        Rectangle {
            Layout.fillWidth: true
            Layout.fillHeight: true
            color: Theme.outputBackground
            clip: true

            ListView {
                id: view
                objectName: "outputView"

                property bool following: true
                // The widest line seen, for horizontal scrolling (no wrapping).
                property real maxLineWidth: 0

                // Deferred with Qt.callLater: by the time it runs the person may
                // have started to scroll, and then it must not pull the view back.
                function stickToEnd() {
                    if (following)
                        positionViewAtEnd()
                }
                // At the end, give or take four lines: while lines pour in, the end
                // moves on during a scroll, and "back at the bottom" must still count.
                function nearEnd(): bool {
                    return originY + contentHeight - (contentY + height) <= 4 * Theme.lineHeight
                }

                anchors.fill: parent
                anchors.topMargin: 4
                anchors.bottomMargin: 2
                model: pane.outputModel
                focus: true
                activeFocusOnTab: true
                clip: true
                reuseItems: true
                boundsBehavior: Flickable.StopAtBounds
                // Desktop behaviour: the wheel and the scroll bars scroll; dragging selects.
                acceptedButtons: Qt.NoButton
                flickableDirection: Flickable.AutoFlickIfNeeded
                contentWidth: Math.max(width, maxLineWidth + 2 * Theme.spacing + 8)

                onCountChanged: if (following) Qt.callLater(view.stickToEnd)
                onHeightChanged: if (following) Qt.callLater(view.stickToEnd)
                // The person scrolls: stop following; back at the end: follow again.
                property bool jumped: false
                onMovementStarted: {
                    jumped = false
                    following = false
                }
                onMovementEnded: {
                    if (jumped) {
                        jumped = false
                        following = true
                        stickToEnd()
                    } else {
                        following = nearEnd()
                    }
                }
                onAtYEndChanged: if (atYEnd && (moving || vbar.pressed)) following = true

                Keys.onPressed: event => {
                    if (event.key === Qt.Key_PageUp || event.key === Qt.Key_PageDown) {
                        const step = (event.key === Qt.Key_PageUp ? -1 : 1) * (height - 2 * Theme.lineHeight)
                        contentY = Math.max(originY, Math.min(contentY + step, originY + contentHeight - height))
                        following = nearEnd()
                        event.accepted = true
                    } else if (event.key === Qt.Key_Home) {
                        following = false
                        positionViewAtBeginning()
                        event.accepted = true
                    }
                }

                ScrollBar.vertical: ScrollBar {
                    id: vbar
                    policy: ScrollBar.AsNeeded
                    onPressedChanged: view.following = pressed ? false : view.nearEnd()
                }
                ScrollBar.horizontal: ScrollBar { policy: ScrollBar.AsNeeded }

                delegate: Rectangle {
                    id: line

                    required property int index
                    required property string styled
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

                    Text {
                        id: lineText
                        x: Theme.spacing + 4
                        height: parent.height
                        verticalAlignment: Text.AlignVCenter
                        text: line.styled
                        textFormat: Text.StyledText
                        color: line.isStderr ? Theme.stderrText : Theme.outputText
                        font.family: Theme.monoFamily
                        font.pixelSize: Theme.monoFontSize
                        wrapMode: Text.NoWrap
                        onImplicitWidthChanged: if (implicitWidth > view.maxLineWidth) view.maxLineWidth = implicitWidth
                    }

                    MouseArea {
                        anchors.fill: parent
                        acceptedButtons: Qt.LeftButton
                        onPressed: mouse => {
                            view.forceActiveFocus()
                            if (!(mouse.modifiers & Qt.ShiftModifier) || pane.anchorRow < 0)
                                pane.anchorRow = line.index
                            pane.cursorRow = line.index
                        }
                        onPositionChanged: mouse => {
                            const p = mapToItem(view.contentItem, mouse.x, mouse.y)
                            const row = view.indexAt(p.x, p.y)
                            if (row >= 0)
                                pane.cursorRow = row
                        }
                    }
                }
            }

            // What to do when there is nothing to show.
            Text {
                objectName: "outputEmpty"
                anchors.centerIn: parent
                visible: view.count === 0
                text: pane.outputModel.procId < 0 ? qsTr("Select a process and press Enter to stream its output")
                    : pane.outputModel.filterText.length > 0 ? qsTr("No line matches the filter")
                    : qsTr("No output yet")
                color: Theme.textFaint
                font.pixelSize: Theme.fontSize
            }

            // Back to the tail, shown while not following.
            Button {
                id: liveButton
                objectName: "jumpToLiveButton"
                visible: !view.following && view.count > 0
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
                    text: pane.outputModel.filterText.length > 0
                          ? qsTr("%1 of %2 lines").arg(view.count).arg(pane.outputModel.lineCount)
                          : qsTr("%1 lines").arg(pane.outputModel.lineCount)
                    color: Theme.textFaint
                    font.pixelSize: Theme.smallFontSize
                }
                Text {
                    visible: pane.hasSelection
                    text: qsTr("%1 selected").arg(pane.selectionEnd - pane.selectionStart + 1)
                    color: Theme.textFaint
                    font.pixelSize: Theme.smallFontSize
                }
                Item { Layout.fillWidth: true }
                Text {
                    objectName: "followState"
                    text: view.following ? qsTr("● following") : qsTr("paused · End to follow")
                    color: view.following ? Theme.success : Theme.warning
                    font.pixelSize: Theme.smallFontSize
                }
            }
        }
    }
}
