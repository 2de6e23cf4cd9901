"""Records (pydantic schemas) and readers/writers for crossknow's files and external formats."""
