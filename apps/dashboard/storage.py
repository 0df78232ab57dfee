"""Static files: hashed names and pre-compressed copies (WhiteNoise) after collectstatic; plain
names served through the finders before it (development, tests)."""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticStorage(CompressedManifestStaticFilesStorage):
    manifest_strict = False

    def stored_name(self, name: str) -> str:
        try:
            return super().stored_name(name)
        except ValueError:  # not collected: WhiteNoise serves the file from its app folder
            return name
