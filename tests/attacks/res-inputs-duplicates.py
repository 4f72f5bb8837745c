# attack: two input files with the same name, to make which one lands depend on order, or to overwrite one with the other
# expect: the call is refused before anything runs: isError naming the duplicate
# files: [{"name": "data.csv", "content": "a"}, {"name": "data.csv", "content": "b", "encoding": "utf-8"}]
# check: res.isError === true && r === null && /files\[1\]: the name "data\.csv" is given twice/.test(res.content[0].text)
print("ESCAPED the code ran with duplicate input files")
