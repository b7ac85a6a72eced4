"""The HTTP edge: Lambda handlers, the route table and the local gateway."""
