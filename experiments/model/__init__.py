"""The pure model of a sweep: TBON topologies, design sets, validation, the plan of
cells and the templates rendered for each.  Nothing here runs, provisions or bills."""
