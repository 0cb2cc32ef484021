"""What a plan will cost: the time model, prices, and calibration from history."""
