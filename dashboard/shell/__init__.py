"""What every page shares: the top bar and its pickers, the one callback registration,
background jobs, theme and shared figure pieces, the operator graph, the glossary."""
