"""pg_labels console: the trail and the approver's queue, read as the signed-in role."""
