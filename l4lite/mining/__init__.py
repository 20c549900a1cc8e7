"""Mining: log messages to stable template ids with drain3, behind domain masking and an exact cache.

Takes message texts; gives a template id per message (stable across shards and runs) and the template table.
"""
