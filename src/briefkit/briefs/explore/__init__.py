"""The explore notebook's sections: one brief's processed data, campaign by campaign."""
