"""Usual English nicknames of formal given names: the one data table of name variants (issue 10).

Each line of ``_TABLE`` is ``Formal: nickname nickname ...``. ``NICKNAMES`` maps a formal given
name to its nicknames; ``FORMAL`` maps a nickname back to the formal names it may stand for.
Identifiers use both directions with a surname ("Bob Smith" for a listed Robert Smith, "Robert
Smith" for a listed Bob Smith) and formal -> nickname for a given name alone ("Marty" for a
listed Martin), never nickname -> formal alone ("Michael" alone is not "Mike X").
"""

from __future__ import annotations

_TABLE = """
Abigail: Abby Gail
Abraham: Abe
Albert: Al Bert
Alexander: Alex Sandy Xander
Alexandra: Alex Sandra Lexi
Alfred: Al Alf Fred
Allison: Allie Ali
Andrew: Andy Drew
Angela: Angie
Anthony: Tony
Antonio: Tony
Arthur: Art Artie
Barbara: Barb Barbie
Benjamin: Ben Benny
Bernard: Bernie
Beverly: Bev
Bradford: Brad
Bradley: Brad
Brian: Bri
Bryan: Bri
Calvin: Cal
Carol: Carrie
Caroline: Carrie Carol
Catherine: Cathy Kate Cat
Charles: Charlie Chuck Chas
Charlotte: Charlie Lottie
Christina: Chris Tina
Christine: Chris Tina
Christopher: Chris Kit
Clifford: Cliff
Cynthia: Cindy
Daniel: Dan Danny
David: Dave Davey
Deborah: Deb Debbie
Debra: Deb Debbie
Dennis: Denny
Donald: Don Donnie
Dorothy: Dot Dottie
Douglas: Doug
Edward: Ed Eddie Ted Ned
Edmund: Ed Ned
Edwin: Ed
Eleanor: Ellie Nell
Elizabeth: Liz Beth Betty Liza Lizzie Eliza
Emily: Em Emmy
Eugene: Gene
Frances: Fran Frankie
Francis: Frank Fran
Frederick: Fred Freddie Rick
Gabriel: Gabe
Gerald: Gerry Jerry
Geoffrey: Geoff Jeff
Gilbert: Gil
Gregory: Greg
Harold: Hal Harry
Henry: Hank Harry
Herbert: Herb
Howard: Howie
Isaac: Ike
Jacob: Jake
Jacqueline: Jackie
James: Jim Jimmy Jamie
Janet: Jan
Jeffrey: Jeff
Jennifer: Jen Jenny
Jerome: Jerry
Jessica: Jess Jessie
John: Jack Johnny
Jonathan: Jon Johnny
Joseph: Joe Joey
Joshua: Josh
Judith: Judy
Katherine: Kathy Kate Katie Kat
Kathleen: Kathy Kate
Kenneth: Ken Kenny
Kimberly: Kim
Kristina: Kris Tina
Lawrence: Larry
Leonard: Len Lenny Leo
Leslie: Les
Louis: Lou
Margaret: Maggie Meg Peggy Marge Greta
Martin: Marty
Matthew: Matt
Melissa: Missy Mel
Michael: Mike Mick Mickey
Michelle: Shelly Mich
Mitchell: Mitch
Nathan: Nate
Nathaniel: Nate Nat
Nicholas: Nick Nicky
Nicole: Nikki
Oliver: Ollie
Pamela: Pam
Patricia: Pat Patty Trish Tricia
Patrick: Pat Paddy
Peter: Pete
Philip: Phil
Phillip: Phil
Randal: Randy
Randall: Randy
Raymond: Ray
Rebecca: Becky Becca
Richard: Rich Rick Dick Richie
Robert: Bob Rob Bobby Robbie Bert
Rodney: Rod
Ronald: Ron Ronnie
Russell: Russ
Samantha: Sam Sammy
Samuel: Sam Sammy
Sandra: Sandy
Stanley: Stan
Stephanie: Steph
Stephen: Steve
Steven: Steve
Stuart: Stu
Susan: Sue Suzy
Suzanne: Sue Suzy
Terrence: Terry
Terence: Terry
Theodore: Ted Teddy Theo
Thomas: Tom Tommy
Timothy: Tim Timmy
Tobias: Toby
Valerie: Val
Victoria: Vicky Tori
Vincent: Vince Vinny
Walter: Walt Wally
William: Bill Will Billy Willie Liam
Winifred: Winnie
Zachary: Zach Zack
Douglass: Doug
Gordon: Gord
Harrison: Harry
Jeremiah: Jerry
Joanne: Jo
Josephine: Jo Josie
Leonardo: Leo
Lucille: Lucy
Maximilian: Max
Maxwell: Max
Montgomery: Monty
Nancy: Nan
Norman: Norm
Ralph: Ralphie
Reginald: Reggie Reg
Roberta: Bobbie Robbie
Ronnie: Ron
Solomon: Sol
Sylvester: Sly
Thaddeus: Tad
Vernon: Vern
Wesley: Wes
Wilfred: Wil Fred
Angelo: Angie
Barry: Baz
Cameron: Cam
Cornelius: Neil
Dominic: Dom
Emmanuel: Manny
Franklin: Frank
Giovanni: Gio
Ignatius: Iggy
Kristopher: Kris
Manuel: Manny
Mortimer: Morty
Raphael: Raf
Salvatore: Sal
Sebastian: Seb
Sheldon: Shelly
"""

NICKNAMES: dict[str, tuple[str, ...]] = {}
for _line in _TABLE.strip().splitlines():
    _formal, _, _nicks = _line.partition(":")
    NICKNAMES[_formal.strip()] = tuple(dict.fromkeys(_nicks.split()))

FORMAL: dict[str, tuple[str, ...]] = {}
for _formal_name, _nick_names in NICKNAMES.items():
    for _nick in _nick_names:
        FORMAL[_nick] = (*FORMAL.get(_nick, ()), _formal_name)
