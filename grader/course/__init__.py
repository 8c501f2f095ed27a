"""What an assignment is: the registry of declarations (`registry`), where its files live
(`layout`), the stored reference outputs (`references`, public ones in `public/`) and the
public cases released for `check()` (`checkfile`)."""
