"""What a plan will cost: the time model (fitted from history, with an interval) and prices."""
