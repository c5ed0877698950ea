pragma ComponentBehavior: Bound

import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

// The one-line error under a field; it takes no room while there is none.
Label {
    Layout.fillWidth: true
    visible: text.length > 0
    color: Theme.danger
    font.pixelSize: Theme.smallFontSize + 1
    wrapMode: Text.Wrap
}
