"""Qt adapters over the supervisor: models, controllers and the window's view-models."""
