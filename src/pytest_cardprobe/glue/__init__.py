"""glue"""
