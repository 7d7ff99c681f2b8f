"""The Dash web app: live overview, nodes, what-if and reports (DESIGN sections 1 and 8)."""
