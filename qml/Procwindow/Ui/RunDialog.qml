pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Procwindow

// Run… : start a command in a scope. The dialog collects the fields; its RunForm
// checks them and starts the command. A failure keeps the dialog open, the fields
// as typed, with the error under the field at fault; the dialog closes once the
// command has started. The form opens it (form.open(session, agent)).
Dialog {
    id: dialog

    required property RunForm form

    function submit() { dialog.form.submit(sessionField.text, agentField.text, commandField.text, cwdField.text) }

    objectName: "runDialog"
    title: dialog.form.title
    modal: true
    focus: true
    // While the command starts, the dialog waits for the answer.
    closePolicy: dialog.form.busy ? Popup.NoAutoClose : Popup.CloseOnEscape | Popup.CloseOnPressOutside
    width: Math.min(560, parent ? parent.width - 40 : 560)
    anchors.centerIn: parent
    padding: 16
    topPadding: 12

    onAboutToShow: { sessionField.text = dialog.form.session; agentField.text = dialog.form.agent }

    Connections {
        target: dialog.form
        function onOpenRequested() { dialog.open() }
        function onSucceeded() { dialog.close() }
    }

    background: Rectangle {
        color: Theme.raised
        radius: 6
        border.color: Theme.borderStrong
    }
    Overlay.modal: Rectangle {
        color: "#80000000"
    }
    header: Label {
        text: dialog.title
        elide: Text.ElideRight
        padding: 16
        bottomPadding: 4
        color: Theme.text
        font.pixelSize: Theme.fontSize + 2
        font.weight: Font.DemiBold
    }
    footer: Item {
        implicitHeight: buttons.implicitHeight + 16

        RowLayout {
            id: buttons
            anchors.right: parent.right
            anchors.top: parent.top
            anchors.rightMargin: 16
            spacing: Theme.spacing

            DialogButton {
                objectName: "runOkButton"
                text: qsTr("OK")
                primary: true
                enabled: !dialog.form.busy
                onClicked: dialog.submit()
            }
            DialogButton {
                objectName: "runCancelButton"
                text: qsTr("Cancel")
                enabled: !dialog.form.busy
                onClicked: dialog.reject()
            }
        }
    }

    contentItem: GridLayout {
        columns: 2
        columnSpacing: 12
        rowSpacing: 10

        FieldLabel { text: qsTr("Command") }
        ColumnLayout {
            Layout.fillWidth: true
            spacing: 3
            FormField {
                id: commandField
                objectName: "runCommandField"
                faulty: dialog.form.commandError.length > 0
                placeholderText: qsTr("e.g. make test   (no shell: use sh -c '…' for pipes)")
                font.family: Theme.monoFamily
                font.pixelSize: Theme.monoFontSize + 1
                onTextEdited: dialog.form.edited("command")
                onAccepted: dialog.submit()
                // Each opening starts here, the last command selected, ready to be typed over.
                Connections {
                    target: dialog
                    function onAboutToShow() { commandField.forceActiveFocus(); commandField.selectAll() }
                }
            }
            FieldError {
                objectName: "runCommandError"
                text: dialog.form.commandError
            }
        }

        FieldLabel { text: qsTr("Session") }
        ColumnLayout {
            Layout.fillWidth: true
            spacing: 3
            FormField {
                id: sessionField
                objectName: "runSessionField"
                faulty: dialog.form.sessionError.length > 0
                onTextEdited: dialog.form.edited("session")
                onAccepted: dialog.submit()
            }
            FieldError {
                objectName: "runSessionError"
                text: dialog.form.sessionError
            }
        }

        FieldLabel { text: qsTr("Agent") }
        ColumnLayout {
            Layout.fillWidth: true
            spacing: 3
            FormField {
                id: agentField
                objectName: "runAgentField"
                faulty: dialog.form.agentError.length > 0
                onTextEdited: dialog.form.edited("agent")
                onAccepted: dialog.submit()
            }
            FieldError {
                objectName: "runAgentError"
                text: dialog.form.agentError
            }
        }

        FieldLabel { text: qsTr("Directory") }
        ColumnLayout {
            Layout.fillWidth: true
            spacing: 3
            FormField {
                id: cwdField
                objectName: "runCwdField"
                faulty: dialog.form.cwdError.length > 0
                placeholderText: dialog.form.cwdPlaceholder
                onTextEdited: dialog.form.edited("cwd")
                onAccepted: dialog.submit()
            }
            FieldError {
                objectName: "runCwdError"
                text: dialog.form.cwdError
            }
        }

        // No label of its own: the box says what it does.
        Item { implicitWidth: 1 }
        CheckBox {
            objectName: "runStdinBox"
            text: qsTr("Keep its stdin open (type its input under its output)")
            // On a terminal, what is typed in its screen is its input.
            enabled: !dialog.form.pty
            checked: dialog.form.stdin
            onToggled: dialog.form.stdin = checked
            focusPolicy: Qt.TabFocus
            leftPadding: 0
            font.pixelSize: Theme.smallFontSize + 1
            palette.windowText: Theme.textDim
        }
        Item { implicitWidth: 1 }
        CheckBox {
            objectName: "runPtyBox"
            text: qsTr("Run on a terminal (its screen shows, keys typed there go to it)")
            checked: dialog.form.pty
            onToggled: dialog.form.pty = checked
            focusPolicy: Qt.TabFocus
            leftPadding: 0
            font.pixelSize: Theme.smallFontSize + 1
            palette.windowText: Theme.textDim
        }

        FieldError {
            objectName: "runGeneralError"
            Layout.columnSpan: 2
            text: dialog.form.generalError
        }
    }
}
