pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Procwindow

// Attach… : show another server's processes beside this window's own. The dialog
// collects the server; its AttachForm reaches it (the OK button waits meanwhile).
// A failure keeps the dialog open with the reason under the field; the dialog
// closes once the server shows in the session tree.
Dialog {
    id: dialog

    required property AttachForm form

    function submit() { dialog.form.submit(targetField.text) }

    objectName: "attachDialog"
    title: qsTr("Attach to a server")
    modal: true
    focus: true
    closePolicy: dialog.form.busy ? Popup.NoAutoClose : Popup.CloseOnEscape | Popup.CloseOnPressOutside
    width: Math.min(520, parent ? parent.width - 40 : 520)
    anchors.centerIn: parent
    padding: 16
    topPadding: 12

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

            Label {
                visible: dialog.form.busy
                text: qsTr("Connecting…")
                color: Theme.textFaint
                font.pixelSize: Theme.smallFontSize + 1
            }
            DialogButton {
                objectName: "attachOkButton"
                text: qsTr("Attach")
                primary: true
                enabled: !dialog.form.busy
                onClicked: dialog.submit()
            }
            DialogButton {
                objectName: "attachCancelButton"
                text: qsTr("Cancel")
                enabled: !dialog.form.busy
                onClicked: dialog.reject()
            }
        }
    }

    contentItem: ColumnLayout {
        spacing: 6

        FieldLabel {
            text: qsTr("Server")
        }
        FormField {
            id: targetField
            objectName: "attachTargetField"
            faulty: dialog.form.error.length > 0
            enabled: !dialog.form.busy
            placeholderText: qsTr("NAME, /path/of.sock or ssh://[user@]host[:port][/NAME]")
            font.family: Theme.monoFamily
            font.pixelSize: Theme.monoFontSize + 1
            onTextEdited: dialog.form.edited()
            onAccepted: dialog.submit()
            Connections {
                target: dialog
                function onAboutToShow() { targetField.forceActiveFocus(); targetField.selectAll() }
            }
        }
        FieldError {
            objectName: "attachError"
            text: dialog.form.error
        }
        Label {
            Layout.fillWidth: true
            text: qsTr("Its sessions show under a node of their own; closing the window, or Detach, stops nothing there. Over ssh, your OpenSSH config, keys and known hosts are used.")
            color: Theme.textFaint
            font.pixelSize: Theme.smallFontSize + 1
            wrapMode: Text.Wrap
        }
    }
}
