pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

// Run… : start a command in a scope. The command line is split by Python (shlex),
// not here; the dialog only collects the fields.
Dialog {
    id: dialog

    // The scope the fields start from each time the dialog opens.
    property string session
    property string agent

    // Emitted on OK with the fields as typed.
    signal runRequested(string session, string agent, string commandLine, string cwd)

    objectName: "runDialog"
    title: qsTr("Run a command")
    modal: true
    focus: true
    width: Math.min(560, parent ? parent.width - 40 : 560)
    anchors.centerIn: parent
    padding: 16
    topPadding: 12

    readonly property bool acceptable: commandField.text.trim().length > 0
                                       && sessionField.text.trim().length > 0
                                       && agentField.text.trim().length > 0

    onAccepted: runRequested(sessionField.text.trim(), agentField.text.trim(), commandField.text, cwdField.text.trim())
    onAboutToShow: { sessionField.text = dialog.session; agentField.text = dialog.agent }

    background: Rectangle {
        color: Theme.raised
        radius: 6
        border.color: Theme.borderStrong
    }
    Overlay.modal: Rectangle {
        color: "#80000000"
    }
    footer: DialogButtonBox {
        alignment: Qt.AlignRight
        padding: 12
        topPadding: 4
        spacing: Theme.spacing
        background: Item {}

        Button {
            objectName: "runOkButton"
            text: qsTr("OK")
            enabled: dialog.acceptable
            DialogButtonBox.buttonRole: DialogButtonBox.AcceptRole
        }
        Button {
            objectName: "runCancelButton"
            text: qsTr("Cancel")
            DialogButtonBox.buttonRole: DialogButtonBox.RejectRole
        }
    }
    header: Label {
        text: dialog.title
        padding: 16
        bottomPadding: 4
        color: Theme.text
        font.pixelSize: Theme.fontSize + 2
        font.weight: Font.DemiBold
    }

    contentItem: GridLayout {
        columns: 2
        columnSpacing: 12
        rowSpacing: 10

        Label { text: qsTr("Command"); color: Theme.textDim }
        TextField {
            id: commandField
            objectName: "runCommandField"
            Layout.fillWidth: true
            placeholderText: qsTr("e.g. make test   (no shell: use sh -c '…' for pipes)")
            font.family: Theme.monoFamily
            font.pixelSize: Theme.monoFontSize + 1
            selectByMouse: true
            onAccepted: if (dialog.acceptable) dialog.accept()
            // Each opening starts here, the last command selected, ready to be typed over.
            Connections {
                target: dialog
                function onAboutToShow() { commandField.forceActiveFocus(); commandField.selectAll() }
            }
        }
        Label { text: qsTr("Session"); color: Theme.textDim }
        TextField {
            id: sessionField
            objectName: "runSessionField"
            Layout.fillWidth: true
            selectByMouse: true
            onAccepted: if (dialog.acceptable) dialog.accept()
        }
        Label { text: qsTr("Agent"); color: Theme.textDim }
        TextField {
            id: agentField
            objectName: "runAgentField"
            Layout.fillWidth: true
            selectByMouse: true
            onAccepted: if (dialog.acceptable) dialog.accept()
        }
        Label { text: qsTr("Directory"); color: Theme.textDim }
        TextField {
            id: cwdField
            objectName: "runCwdField"
            Layout.fillWidth: true
            placeholderText: qsTr("current directory")
            selectByMouse: true
            onAccepted: if (dialog.acceptable) dialog.accept()
        }
    }
}
