# attack: input files whose base64 is not base64 (a space, the URL-safe alphabet, padding in the middle, a lone digit), and a "files" that is no array
# expect: the call is refused before anything runs: isError naming the file and where the base64 stops being base64
# files: [{"name": "a.bin", "content": "QUJD REVG", "encoding": "base64"}]
# check: res.isError === true && r === null && /files\[0\] \("a\.bin"\): content is not valid base64 \(at byte 4\)/.test(res.content[0].text)
print("ESCAPED the code ran with invalid base64")
