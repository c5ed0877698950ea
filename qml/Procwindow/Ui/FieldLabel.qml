pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

// A field's name, level with its field (an error may grow the cell below it).
Label {
    Layout.alignment: Qt.AlignTop
    Layout.preferredHeight: 30
    verticalAlignment: Text.AlignVCenter
    color: Theme.textDim
}
