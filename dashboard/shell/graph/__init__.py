"""The operator graph every page draws the same way: geometry, elements, style, panel."""
