pragma Singleton

import QtQuick

// Colours, type and metrics of the window: one calm dark theme, in one place.
QtObject {
    // Surfaces, from the back to the front.
    readonly property color window: "#1e1f22"
    readonly property color surface: "#25272b"
    readonly property color raised: "#2b2d31"
    readonly property color header: "#2b2d31"
    readonly property color input: "#1b1c1f"
    readonly property color border: "#393b40"
    readonly property color borderStrong: "#4a4d54"
    readonly property color divider: "#2f3135"

    // Text.
    readonly property color text: "#dfe1e5"
    readonly property color textDim: "#9da0a8"
    readonly property color textFaint: "#6f737a"
    readonly property color textOnAccent: "#ffffff"

    // State.
    readonly property color accent: "#3574f0"
    readonly property color accentSoft: "#2e436e"
    readonly property color hover: "#30333a"
    readonly property color pressed: "#3a3d45"
    readonly property color selection: "#2e436e"
    readonly property color selectionInactive: "#383b42"
    readonly property color focusRing: "#3574f0"
    readonly property color danger: "#e06c75"
    readonly property color warning: "#e5b567"
    readonly property color success: "#6aab73"
    // A window's banner: behind an error, behind any other message.
    readonly property color bannerError: "#4a2529"
    readonly property color bannerInfo: "#243a2a"

    // The output pane.
    readonly property color outputBackground: "#1b1c1f"
    readonly property color outputText: "#d4d6db"
    readonly property color stderrBackground: "#2e1f22"
    readonly property color stderrMark: "#e06c75"
    readonly property color stderrText: "#f0b3b8"
    readonly property color lineNumber: "#5a5e66"
    readonly property color lineSelection: "#2e436e"
    // A filter's matches and the current one: translucent, so that they read over a
    // dark or a light pane, a stderr line or the selection alike.
    readonly property color match: "#6bd4a017"
    readonly property color matchCurrent: "#c2e8780c"
    readonly property color matchCurrentMark: "#f0a030"
    // The time before a line (the pane's times toggle).
    readonly property color timestamp: "#7a7f88"

    // Type.
    readonly property string monoFamily: "DejaVu Sans Mono"
    readonly property string uiFamily: Application.font.family
    readonly property int fontSize: 13
    readonly property int smallFontSize: 11
    readonly property int monoFontSize: 12

    // Metrics.
    readonly property int spacing: 8
    readonly property int smallSpacing: 4
    readonly property int radius: 4
    readonly property int barHeight: 38
    readonly property int rowHeight: 28
    readonly property int lineHeight: 18
    readonly property int iconSize: 16
    readonly property int buttonSize: 26

    // A resource (an icon) by name: resources/icons/<name>.svg. The module lives in
    // qml/Procwindow/Ui/, three levels below the directory that holds resources/.
    readonly property url iconRoot: Qt.resolvedUrl("../../../resources/icons/")
    function icon(name: string): url { return iconRoot + name + ".svg" }
}
