"""The sanitizer a build runs under, as a test argument."""

def sanitizer_args():
    """["--sanitizer=asan"] (or ubsan, tsan) under that config, else []."""
    return select({
        "//third_party:asan": ["--sanitizer=asan"],
        "//third_party:tsan": ["--sanitizer=tsan"],
        "//third_party:ubsan": ["--sanitizer=ubsan"],
        "//conditions:default": [],
    })
