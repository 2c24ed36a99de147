"""boatload: reproduce five small-file file-system studies."""
__version__ = "0.1.0"
